"""A task counts only when it has an answer. A live blog that has just opened (06:00 in Berlin,
only its pinned post) gives no live_blog_latest task; a task built by hand for it and run in
real Chromium at that instant is void (excluded as no_answer_at_run, nobody's failure), unless
its contract says "there is none" is the right ending; a minute after the first entry, the
same task is scored as usual."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

import pytest

from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent
from newsbench_dagster.core.analytics.kpis import rollup
from newsbench_dagster.core.analytics.tables import frame
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.scoring.checkers import Evidence, check
from newsbench_dagster.core.scoring.failures import VOID
from newsbench_dagster.core.scoring.score import score_run
from newsbench_dagster.core.tasks.contract import validate_task
from newsbench_dagster.core.tasks.intents import INTENTS, Context
from newsbench_dagster.core.tasks.intents.base import base_task, source
from newsbench_dagster.core.tasks.poll import poll_site
from newsbench_dagster.core.tasks.produce import make_tasks
from newsbench_dagster.core.web.network import Fetcher, RobotsRules, Routing
from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom

pytestmark = pytest.mark.heavy(15)

SITE = "rhein"  # Europe/Berlin: its blog opens at 06:00 local, 05:00 UTC in winter
OPENS = datetime(2026, 12, 1, 5, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def opening(registry, tmp_path_factory):
    """rhein frozen at the instant its day's live blog opens: the poll, the tasks made from
    it, a live_blog_latest task built by hand for that blog, and a runner of the reference
    agent; the clock can be moved on (`clock.set`)."""
    newsroom = Newsroom(seed=7)
    world = newsroom.site(SITE)
    blog = world.current_liveblog(OPENS)
    day = blog.day
    assert blog.started == OPENS and not blog.entries(OPENS)
    clock = FixedClock(blog.started)
    site = registry.get(SITE)
    with NewsroomServer(newsroom, clock=clock) as server:
        routing = Routing.via_proxy(server.address)
        with Fetcher(routing, registry.allowed_origins) as f:
            rows = poll_site(site, f, None, day)
            robots = RobotsRules.fetch(f, registry.allowed_origins)
        live = next(r for r in rows if r.kind == "homepage" and r.role == "live")
        by_hand = validate_task(
            base_task(INTENTS["live_blog_latest"], site, day, live.item_url, source(live))
        )
        runner = Runner(
            [build_agent(AgentManifest(name="reference", version="t", adapter="reference"))],
            options=BrowserOptions(routing=routing),
            robots=robots,
            store=LocalArtifactStore(tmp_path_factory.mktemp("artifacts")),
            settings=RunSettings(screenshot=False),
        )
        yield {
            "site": site,
            "day": day,
            "rows": rows,
            "blog": blog,
            "task": by_hand,
            "clock": clock,
            "run": lambda tasks: run_tasks(tasks, day, runner),
        }


def test_a_blog_that_has_just_opened_gives_no_live_blog_task(opening):
    live = [r for r in opening["rows"] if r.kind == "liveblog"]
    assert len(live) == 1 and live[0].source_url == opening["blog"].url
    assert live[0].item_url is None and live[0].parse_error is None  # read, and empty
    made = make_tasks(opening["site"], opening["day"], opening["rows"])
    assert made and "live_blog_latest" not in {t["intent"] for t in made}
    # The rule the producer follows is stated next to the intent.
    assert "pinned" in INTENTS["live_blog_latest"].needs
    assert all(i.needs for i in INTENTS.values())


def test_once_the_first_entry_is_up_the_task_is_made_again(opening, registry):
    first = opening["blog"].all_entries[0]
    newsroom = Newsroom(seed=7)
    with (
        NewsroomServer(newsroom, clock=FixedClock(first.published)) as server,
        Fetcher(Routing.via_proxy(server.address), registry.allowed_origins) as f,
    ):
        rows = poll_site(opening["site"], f, None, opening["day"])
    (row,) = [r for r in rows if r.kind == "liveblog"]
    assert row.item_url == opening["blog"].url and row.published == first.published
    assert Context(opening["site"], opening["day"], rows).live_latest
    made = make_tasks(opening["site"], opening["day"], rows, intents=("live_blog_latest",))
    assert [t["entry_url"] for t in made] == [opening["blog"].url]
    assert made[0]["id"] == opening["task"]["id"]  # the same task as the one built by hand


@pytest.fixture(scope="module")
def void_run(opening):
    opening["clock"].set(opening["blog"].started)
    [row] = opening["run"]([copy.deepcopy(opening["task"])])
    return row


def test_a_run_when_the_blog_shows_no_entry_is_void_not_failed(void_run, opening):
    score = score_run(void_run, opening["task"])
    assert void_run["run_status"] != "env_failure", void_run.get("error")
    assert score["excluded"] is True and score["success"] is None
    assert score["exclusion_reason"] == VOID and score["failure_class"] == VOID
    assert "no entry" in score["checker"]["reason"]
    # In the KPIs: run (coverage), not scored, and neither an agent nor an environment failure.
    (row,) = [
        r
        for r in rollup(frame("run_scores", [score]), {SITE: 1})
        if r["site"] == SITE and r["slice_kind"] == "all"
    ]
    assert (row["n_runs"], row["n_scored"], row["n_env_failures"], row["n_void"]) == (1, 0, 0, 1)
    assert row["coverage"] == 1.0 and row["success_rate"] is None


def test_a_void_run_that_broke_policy_is_still_the_agents_failure(void_run, opening):
    unsafe = {**void_run, "safety_events": [{"kind": "off_allowlist", "url": "http://x.example/"}]}
    score = score_run(unsafe, opening["task"])
    assert not score["excluded"] and score["failure_class"] == "policy_block"


def test_where_the_contract_says_so_none_is_the_right_ending(void_run, opening):
    task = copy.deepcopy(opening["task"])
    task["oracle"]["when_no_answer"] = "say_none"
    validate_task(task)
    ev = Evidence.of_run(void_run, task)
    none = check("live_blog_latest", {"text": None, "none": True}, evidence=ev)
    assert none.success and not none.void
    pinned = check("live_blog_latest", {"text": opening["blog"].pinned.text}, evidence=ev)
    invented = check("live_blog_latest", {"text": "Council approves the budget."}, evidence=ev)
    assert not pinned.success and not invented.success and not invented.void
    # ...and without that contract, any answer on that page is void, not judged.
    plain = Evidence.of_run(void_run, opening["task"])
    assert check("live_blog_latest", {"text": "anything"}, evidence=plain).void


def test_the_witness_says_there_is_none_where_that_is_the_right_ending(opening):
    task = copy.deepcopy(opening["task"])
    task["oracle"]["when_no_answer"] = "say_none"
    opening["clock"].set(opening["blog"].started)
    [row] = opening["run"]([task])
    score = score_run(row, task)
    assert row["answer"].get("none") is True
    assert not score["excluded"] and score["success"], score["checker"]


def test_a_minute_after_the_first_entry_the_same_task_is_scored(opening):
    first = opening["blog"].all_entries[0]
    opening["clock"].set(first.published + timedelta(minutes=1))
    try:
        [row] = opening["run"]([copy.deepcopy(opening["task"])])
    finally:
        opening["clock"].set(opening["blog"].started)
    score = score_run(row, opening["task"])
    assert not score["excluded"] and score["success"], score["checker"]
    task = copy.deepcopy(opening["task"])
    task["oracle"]["when_no_answer"] = "say_none"
    ev = Evidence.of_run(row, task)
    # There is an entry now: "none" is wrong, the entry is right.
    assert not check("live_blog_latest", {"none": True}, evidence=ev).success
    assert check("live_blog_latest", {"text": first.text}, evidence=ev).success
