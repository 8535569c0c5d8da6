"""The temporal window: the lead rotates while the agent works. The harness probes the entry
page again at the end of the run, and an answer that matches any state seen in the window
(entry, end) is right; a story that was never the lead is still wrong."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from newsbench_dagster.core.agents.protocol import AgentManifest
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.scoring.checkers import check
from newsbench_dagster.core.scoring.score import score_run
from newsbench_dagster.core.tasks.poll import poll_site
from newsbench_dagster.core.tasks.produce import make_tasks
from newsbench_dagster.core.web.network import Fetcher, RobotsRules, Routing
from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom
from tests.support.tasks import LEAD_AND_METADATA

# Real runs across a rotating lead: about 20 s on two busy cores.
pytestmark = pytest.mark.heavy(20)

AT = datetime(2026, 11, 30, 15, 1, tzinfo=UTC)


class RotatingAgent:
    """Works long enough for the front page to move on, then answers the lead it sees then
    (or, with pick="never_lead", a story that was never the lead)."""

    def __init__(self, clock: FixedClock, site, pick: str) -> None:
        self.manifest = AgentManifest(name=f"rotating-{pick}", version="1", adapter="reference")
        self.clock, self.site, self.pick = clock, site, pick

    async def run(self, task, tools):
        self.clock.advance(self.site.rotation)  # the editors pick a new lead meanwhile
        front = self.site.front_page(self.clock())
        story = front.lead if self.pick == "new_lead" else front.others[-1]
        await tools.goto(story.url)
        await tools.answer({"headline": story.headline, "url": story.url})


@pytest.fixture()
def window_runs(registry, tmp_path):
    newsroom = Newsroom(seed=7)
    site = newsroom.site("harbor")
    clock = FixedClock(AT)
    with NewsroomServer(newsroom, clock=clock) as server:
        routing = Routing.via_proxy(server.address)
        with Fetcher(routing, registry.allowed_origins) as f:
            rows = poll_site(registry.get("harbor"), f, None, AT.date())
            robots = RobotsRules.fetch(f, registry.allowed_origins)
        task = next(
            t
            for t in make_tasks(registry.get("harbor"), AT.date(), rows, 0, LEAD_AND_METADATA)
            if t["intent"] == "find_top_headline"
        )
        out = {}
        for pick in ("new_lead", "never_lead"):
            clock.set(AT)
            runner = Runner(
                [RotatingAgent(clock, site, pick)],
                options=BrowserOptions(routing=routing),
                robots=robots,
                store=LocalArtifactStore(tmp_path),
                settings=RunSettings(screenshot=False),
            )
            (row,) = run_tasks([task], AT.date(), runner)
            out[pick] = (row, score_run(row, task))
        first_lead = site.front_page(AT).lead
        assert site.front_page(AT + site.rotation).lead.k != first_lead.k
    return out


def test_a_lead_that_rotated_in_during_the_run_is_right(window_runs):
    row, score = window_runs["new_lead"]
    obs = row["observation"]
    (probe,) = obs["probes"]
    assert probe["when"] == "after" and probe["obs"]["lead"]["href"] == row["answer"]["url"]
    assert obs["entry"]["lead"]["href"] != row["answer"]["url"]  # not the lead at entry
    assert score["success"], score["checker"]
    # Without the probe the same answer would have been judged against the entry alone.
    assert not check("find_top_headline", row["answer"], obs["entry"], obs["final"]).success


def test_a_story_that_never_led_is_still_wrong(window_runs):
    row, score = window_runs["never_lead"]
    assert [p["when"] for p in row["observation"]["probes"]] == ["after"]
    assert not score["success"] and score["failure_class"] == "wrong_target"


class MidRunLeadAgent:
    """Works long enough for the harness to sample the front page while it works: the lead
    it answers exists only in the middle of the run (not at entry, not at the end)."""

    def __init__(self, clock: FixedClock, site) -> None:
        self.manifest = AgentManifest(name="mid-run", version="1", adapter="reference")
        self.clock, self.site = clock, site

    async def run(self, task, tools):
        import asyncio

        self.clock.advance(self.site.rotation)
        story = self.site.front_page(self.clock()).lead
        await asyncio.sleep(2.0)  # the harness samples "during" meanwhile
        await tools.answer({"headline": story.headline, "url": story.url})
        self.clock.advance(self.site.rotation)  # and the editors move on before the end


def test_a_lead_seen_only_during_the_run_is_right_thanks_to_the_sample(registry, tmp_path):
    newsroom = Newsroom(seed=7)
    site = newsroom.site("harbor")
    # A start where entry, middle and end each have their own lead.
    start = next(
        AT + n * site.rotation
        for n in range(24)
        if len({site.front_page(AT + (n + i) * site.rotation).lead.k for i in range(3)}) == 3
    )
    clock = FixedClock(start)
    with NewsroomServer(newsroom, clock=clock) as server:
        routing = Routing.via_proxy(server.address)
        with Fetcher(routing, registry.allowed_origins) as f:
            rows = poll_site(registry.get("harbor"), f, None, start.date())
            robots = RobotsRules.fetch(f, registry.allowed_origins)
        (task,) = make_tasks(registry.get("harbor"), start.date(), rows, 0, LEAD_AND_METADATA)
        runner = Runner(
            [MidRunLeadAgent(clock, site)],
            options=BrowserOptions(routing=routing),
            robots=robots,
            store=LocalArtifactStore(tmp_path),
            settings=RunSettings(screenshot=False, during_every_s=0.3, during_max=1),
        )
        (row,) = run_tasks([task], start.date(), runner)
    obs = row["observation"]
    # The agent stayed on the front page: the final observation is the end of the window.
    assert [p["when"] for p in obs["probes"]] == ["during"]
    assert obs["probes"][0]["obs"]["lead"]["href"] == row["answer"]["url"]
    assert row["answer"]["url"] not in (obs["entry"]["lead"]["href"], obs["final"]["lead"]["href"])
    score = score_run(row, task)
    assert score["success"], score["checker"]
    # The same answer judged without the sample (entry and end only) is wrong.
    obs["probes"] = []
    assert not score_run(row, task)["success"]
