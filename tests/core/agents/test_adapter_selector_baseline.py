"""The selector baseline in real Chromium against a newsroom with its clock frozen: it scores
on the template its selectors came from (classic v1) and fails, as the agent's failure and
never the harness's, after drift: another family, or the same site after its redesign. The
reference agent runs alongside as the control that the tasks stay solvable."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from newsbench_dagster.core.agents.adapters.selector_baseline import LEARNED_ON
from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent, load_manifest
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.scoring.score import score_run
from newsbench_dagster.core.tasks.poll import poll_site
from newsbench_dagster.core.tasks.produce import make_tasks
from newsbench_dagster.core.web.network import Fetcher, RobotsRules, Routing
from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom
from newsbench_dagster.paths import AGENTS_DIR

# The baseline learned and run in real Chromium: about 20 s on two busy cores.
pytestmark = pytest.mark.heavy(20)

# Harbor (classic) redesigns on 2026-11-16, Rheinblatt (grid) on 2026-11-23: before both,
# and after Harbor's only.
BEFORE = datetime(2026, 11, 10, 15, 0, tzinfo=UTC)
AFTER = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)
INTENTS = ("find_top_headline", "extract_article_metadata")
AGENT_FAILURES = {"wrong_target", "perception", "premature_stop", "false_success_claim"}

BASELINE = build_agent(load_manifest(AGENTS_DIR / "selector-baseline.yaml"))
REFERENCE = build_agent(AgentManifest(name="reference", version="0.1.0", adapter="reference"))


@pytest.fixture(scope="module")
def frozen() -> Iterator[tuple[NewsroomServer, FixedClock]]:
    clock = FixedClock(BEFORE)
    with NewsroomServer(Newsroom(seed=7), clock=clock) as server:
        yield server, clock


def scored_runs(server, clock, at: datetime, sites: list[str], registry, tmp_path) -> list:
    """Both agents on each site's front page and newest article at `at`, scored."""
    clock.set(at)
    routing = Routing.via_proxy(server.address)
    tasks = []
    with Fetcher(routing, registry.allowed_origins) as f:
        robots = RobotsRules.fetch(f, registry.allowed_origins)
        for key in sites:
            rows = poll_site(registry.get(key), f, None, at.date())
            made = make_tasks(registry.get(key), at.date(), rows, 1, INTENTS)
            tasks += [t for t in made if t["intent"] in INTENTS]
    assert {(t["site"], t["intent"]) for t in tasks} == {(s, i) for s in sites for i in INTENTS}
    runner = Runner(
        [BASELINE, REFERENCE],
        options=BrowserOptions(routing=routing),
        robots=robots,
        store=LocalArtifactStore(tmp_path),
        settings=RunSettings(concurrency=4, screenshot=False, artifacts=()),
    )
    rows = run_tasks(tasks, at.date(), runner)
    by_id = {t["id"]: t for t in tasks}
    return [(r, score_run(r, by_id[r["task_id"]])) for r in rows]


@pytest.fixture(scope="module")
def before(frozen, registry, tmp_path_factory):
    server, clock = frozen
    sites = ["harbor", "rhein"]
    return scored_runs(server, clock, BEFORE, sites, registry, tmp_path_factory.mktemp("a"))


@pytest.fixture(scope="module")
def after(frozen, registry, tmp_path_factory):
    server, clock = frozen
    return scored_runs(server, clock, AFTER, ["harbor"], registry, tmp_path_factory.mktemp("b"))


def pick(runs, agent: str, site: str) -> list:
    return [(r, s) for r, s in runs if r["agent_name"] == agent and r["site"] == site]


def assert_breaks(runs) -> None:
    assert len(runs) == len(INTENTS)
    for run, score in runs:
        assert run["run_status"] in ("answered", "no_answer"), (run["run_status"], run["error"])
        assert score["excluded"] is False and score["success"] is False, score["checker"]
        assert score["failure_class"] in AGENT_FAILURES, score["failure_class"]
        assert run["self_reported_success"] is not True  # it knows it found nothing


def test_it_succeeds_on_the_template_it_learned_on(before):
    assert LEARNED_ON == {"site": "harbor", "family": "classic", "version": 1}
    runs = pick(before, "selector-baseline", "harbor")
    assert {r["intent"] for r, _ in runs} == set(INTENTS)
    for run, score in runs:
        assert score["success"], (run["intent"], run["answer"], score["checker"])
        assert run["self_reported_success"] is True


def test_it_breaks_on_another_template_family(before):
    assert_breaks(pick(before, "selector-baseline", "rhein"))
    for _, score in pick(before, "reference", "rhein"):
        assert score["success"], score["checker"]  # the tasks were solvable


def test_it_breaks_on_the_same_site_after_its_redesign(after):
    assert_breaks(pick(after, "selector-baseline", "harbor"))
    for _, score in pick(after, "reference", "harbor"):
        assert score["success"], score["checker"]
