"""The replay-backed regression suite (suites/regression/harbor-replayed.yaml): harbor as
recorded in recordings/, run offline with no newsroom at all. The reference agent solves
every task from the recording alone; the selector baseline fails the frozen redesigned front
page as an agent failure."""

from __future__ import annotations

from datetime import date

import pytest

from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent, load_manifest
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.scoring.score import score_run
from newsbench_dagster.core.tasks.suites import load_suites
from newsbench_dagster.core.web.network import Routing
from newsbench_dagster.paths import AGENTS_DIR, PROJECT_ROOT

SUITES = PROJECT_ROOT / "suites"


@pytest.fixture(scope="module")
def replayed(registry):
    load = load_suites(SUITES, registry.allowed_origins, [s.key for s in registry.sites])
    tasks = [st.task for st in load.tasks if st.suite == "regression" and st.task.get("replay")]
    assert len(tasks) >= 4, load.problems
    return tasks


def _run(agent, tasks, tmp_path):
    runner = Runner(
        [agent],
        options=BrowserOptions(routing=Routing.offline()),
        robots=None,
        store=LocalArtifactStore(tmp_path),
        settings=RunSettings(artifacts=(), pace=False),
    )
    return run_tasks(tasks, date(2026, 12, 1), runner)


def test_the_reference_agent_passes_every_replayed_regression_task_offline(replayed, tmp_path):
    agent = build_agent(AgentManifest(name="reference", version="0.1.0", adapter="reference"))
    rows = _run(agent, replayed, tmp_path)
    by_id = {t["id"]: t for t in replayed}
    intents = set()
    for row in rows:
        score = score_run(row, by_id[row["task_id"]])
        assert score["success"], (row["intent"], row["error"], score["checker"])
        assert score["replayed"] and row["replay"]["agent_misses"] == 0
        intents.add(row["intent"])
        if by_id[row["task_id"]].get("grading"):
            assert score["checker"]["grading"]["status"] == "pass"
    assert {"find_top_headline", "extract_article_metadata"} <= intents


def test_the_selector_baseline_fails_the_frozen_redesigned_front_page(replayed, tmp_path):
    # Recorded after harbor's 2026-11-16 redesign: the baseline's fixed CSS selector no longer
    # finds the lead, and the replay shows it the same page every time, so it fails every
    # time, as an agent failure (not a gap in the recording).
    selector = build_agent(load_manifest(AGENTS_DIR / "selector-baseline.yaml"))
    lead = [t for t in replayed if t["intent"] == "find_top_headline"]
    rows = _run(selector, lead * 1, tmp_path)
    for row in rows:
        score = score_run(row, lead[0])
        assert score["success"] is False and not score["excluded"], score["failure_class"]
        assert row["replay"]["agent_misses"] == 0
