"""Real Dagster materializations of the whole graph against the newsroom, real Chromium and a
real DuckDB file."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import duckdb
import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    MultiPartitionKey,
    instance_for_test,
    materialize,
)

from newsbench_dagster.core.analytics.tables import records
from newsbench_dagster.core.scoring.score import score_run
from newsbench_dagster.definitions import ASSETS
from newsbench_dagster.defs.evaluation.checks import compliance
from newsbench_dagster.resources import TaskSetResource
from tests.support.newsroom_clock import frozen_now
from tests.support.pipeline_resources import local_resources

pytestmark = pytest.mark.heavy(50)  # about 50 s on two busy cores

SITE_CHAIN = ["feed_items", "news_tasks", "agent_runs", "run_scores"]


@pytest.fixture
def env(newsroom, tmp_path):
    # The newsroom stopped at this instant for the test: on the live clock a story published
    # between the first materialization and the re-run added a feed item (CI, 14:18 UTC).
    with frozen_now(newsroom):
        yield from _env(newsroom, tmp_path)


def _env(newsroom, tmp_path):
    db = tmp_path / "wh.duckdb"
    resources = local_resources(  # every intent
        db, tmp_path / "artifacts", port=newsroom.port, seed=newsroom.newsroom.seed
    )
    with instance_for_test() as instance:
        yield resources, db, instance


# Where what is tested is the partition's handling, not the intents, one task type does.
LEADS_ONLY = TaskSetResource(intents=["find_top_headline"])


def run_site(resources, instance: DagsterInstance, site: str, day: str, selection=None):
    return materialize(
        [*ASSETS, compliance],
        selection=selection or [*SITE_CHAIN],
        partition_key=MultiPartitionKey({"site": site, "day": day}),
        resources=resources,
        instance=instance,
        raise_on_error=False,
    )


def run_kpis(resources, instance, day: str):
    return materialize(
        ASSETS, selection=["kpi_daily"], partition_key=day, resources=resources, instance=instance
    )


def query(db, sql: str, *args):
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql, list(args)).fetchall()


def counts(db) -> dict[str, int]:
    return {t: query(db, f"SELECT count(*) FROM newsbench.{t}")[0][0] for t in SITE_CHAIN}


def test_whole_graph_for_one_site_and_day(env):
    resources, db, instance = env
    day = datetime.now(UTC).date().isoformat()
    result = run_site(resources, instance, "harbor", day)
    assert result.success
    checks = result.get_asset_check_evaluations()
    assert [c.passed for c in checks] == [True]
    assert run_kpis(resources, instance, day).success

    n_tasks = query(db, "SELECT count(*), count(DISTINCT task_id) FROM newsbench.news_tasks")[0]
    assert n_tasks[0] == n_tasks[1] >= 4
    ((scored, wins),) = query(
        db,
        "SELECT count(*), sum(success::INT) FROM newsbench.run_scores "
        "WHERE NOT excluded AND agent_name = 'reference'",
    )
    assert scored >= 4 and wins / scored >= 0.9, f"reference agent: {wins}/{scored}"
    ((rate, lo, hi, envf),) = query(
        db,
        "SELECT success_rate, success_ci_low, success_ci_high, n_env_failures "
        "FROM newsbench.kpi_daily WHERE site = 'harbor' AND slice_kind = 'all'",
    )
    assert rate == wins / scored and lo <= rate <= hi and envf == 0
    # Every run's judgement beside its run.json, as the warehouse scored it (issue 49).
    verdicts = dict(
        query(
            db,
            "SELECT run_id, CASE WHEN excluded THEN 'excluded' WHEN success THEN 'pass' "
            "ELSE 'fail' END FROM newsbench.run_scores",
        )
    )
    runs = list(db.parent.glob("artifacts/runs/harbor/*/*/*/run.json"))
    judged = {}
    for run in runs:
        j = json.loads((run.parent / "judgement.json").read_text())
        judged[j["run_id"]] = j["verdict"]
    assert runs and judged == verdicts
    assert query(db, "SELECT typeof(day) FROM newsbench.kpi_daily LIMIT 1") == [("TIMESTAMP",)]

    # A deliberately wrong answer to the same task, scored against the same observations.
    with duckdb.connect(str(db), read_only=True) as con:
        runs = records(con.execute("SELECT * FROM newsbench.agent_runs").fetchdf(), "agent_runs")
        tasks = {
            r["task_id"]: r["task"]
            for r in records(
                con.execute("SELECT * FROM newsbench.news_tasks").fetchdf(), "news_tasks"
            )
        }
    top = next(r for r in runs if r["intent"] == "find_top_headline")
    assert score_run(top, tasks[top["task_id"]])["success"]
    wrong_value = {
        "headline": "Council approves budget for parks",
        "url": "http://harbor-herald.test/news/city/budget-1",
    }
    wrong = {
        **top,
        "answer": wrong_value,
        "answers": [{"value": wrong_value, "seconds": 1.0, "claims_success": True}],
    }
    scored_wrong = score_run(wrong, tasks[top["task_id"]])
    assert scored_wrong["success"] is False and scored_wrong["failure_class"] == "wrong_target"
    assert scored_wrong["claim_mismatch"] is True and scored_wrong["reward"] < 0.5
    # The right link with a misread headline is a perception failure, still not a success.
    misread = {**top, "answer": {**top["answer"], "headline": wrong_value["headline"]}}
    assert score_run(misread, tasks[top["task_id"]])["failure_class"] == "perception"

    # Re-materializing the partition replaces its rows: no duplicates anywhere.
    before = counts(db)
    assert run_site(resources, instance, "harbor", day).success
    after = counts(db)
    assert after == before
    for table, key in [
        ("news_tasks", "task_id"),
        ("agent_runs", "run_id"),
        ("run_scores", "run_id"),
    ]:
        ((n, distinct),) = query(
            db, f"SELECT count(*), count(DISTINCT {key}) FROM newsbench.{table}"
        )
        assert n == distinct, table
    assert run_kpis(resources, instance, day).success
    assert query(
        db, "SELECT count(*) FROM newsbench.kpi_daily WHERE site='harbor' AND slice_kind='all'"
    ) == [(1,)]


def test_malformed_feed_is_recorded_and_the_partition_completes(env, newsroom):
    resources, db, instance = env
    day = "2026-11-29"
    newsroom.faults.set("rhein", "feed_malformed")
    result = run_site(resources, instance, "rhein", day, selection=["feed_items", "news_tasks"])
    assert result.success
    mat = instance.get_latest_materialization_event(AssetKey("feed_items")).asset_materialization
    assert mat.metadata["feed_errors"].value == 1
    assert "atom.xml" in mat.metadata["errors"].value
    errors = query(
        db,
        "SELECT DISTINCT kind, parse_error FROM newsbench.feed_items WHERE parse_error IS NOT NULL",
    )
    assert len(errors) == 1 and errors[0][0] == "atom"
    assert query(db, "SELECT count(*) FROM newsbench.news_tasks")[0][0] >= 1

    newsroom.faults.set("rhein", "feed_empty")
    assert run_site(resources, instance, "rhein", day, selection=["feed_items"]).success
    assert query(db, "SELECT parse_error FROM newsbench.feed_items WHERE kind = 'atom'") == [
        ("empty document",)
    ]


def test_site_down_runs_are_environment_failures(env, newsroom):
    resources, db, instance = env
    resources = {**resources, "tasks": LEADS_ONLY}
    day = "2026-11-28"
    assert run_site(resources, instance, "lac", day, selection=["feed_items", "news_tasks"]).success
    newsroom.faults.set("lac", "down")
    assert run_site(resources, instance, "lac", day, selection=["agent_runs", "run_scores"]).success
    newsroom.faults.clear()
    assert run_kpis(resources, instance, day).success
    statuses = query(db, "SELECT DISTINCT run_status, env_failure FROM newsbench.agent_runs")
    assert statuses == [("env_failure", "site_down")]
    ((n_runs, scored, envf, rate),) = query(
        db,
        "SELECT n_runs, n_scored, n_env_failures, success_rate FROM newsbench.kpi_daily "
        "WHERE site = 'lac' AND slice_kind = 'all'",
    )
    assert n_runs == envf >= 1 and scored == 0 and rate is None


class _OutboundAgent:
    """Follows the site's outbound partner link: a redirect off the allowlist."""

    async def run(self, task, tools):
        await tools.click("a[href^='/go?']")
        await tools.answer({"headline": None})


def test_compliance_gate_blocks_scores_when_a_request_left_the_allowlist(env, monkeypatch):
    from newsbench_dagster.core.agents import protocol as agents_mod
    from newsbench_dagster.core.agents.protocol import AgentManifest

    resources, db, instance = env
    resources = {**resources, "tasks": LEADS_ONLY}
    day = "2026-11-27"

    def build(manifest: AgentManifest):
        agent = _OutboundAgent()
        agent.manifest = manifest
        return agent

    monkeypatch.setattr("newsbench_dagster.defs.evaluation.assets.build_agent", build)
    assert agents_mod.build_agent is not build
    result = run_site(resources, instance, "harbor", day)
    assert not result.success  # the blocking check failed the run...
    (check,) = result.get_asset_check_evaluations()
    assert check.passed is False and check.metadata["violations"].value >= 1
    assert "partner-offers.example" in check.description
    # ...and run_scores was never materialized for that partition.
    assert query(db, "SELECT count(*) FROM newsbench.agent_runs")[0][0] >= 1
    assert not query(db, "SELECT 1 FROM information_schema.tables WHERE table_name='run_scores'")


def test_the_task_set_resource_chooses_the_intents_of_every_partition(env):
    resources, db, instance = env
    day = "2026-11-26"
    narrowed = TaskSetResource(
        intents=["newsletter_signup", "extract_article_metadata"], articles_per_site=2
    )
    resources = {**resources, "tasks": narrowed}
    result = run_site(resources, instance, "isar", day, selection=["feed_items", "news_tasks"])
    assert result.success
    made = query(
        db, "SELECT suite, intent, count(*) FROM newsbench.news_tasks GROUP BY 1, 2 ORDER BY 1, 2"
    )
    # The day's two articles, and the signup task with its stop variants (the producer's step
    # order); the gate's reserve beside them: every other article the poll found.
    assert len(made) == 3 and made[1] == ("live", "extract_article_metadata", 2)
    assert made[2][:2] == ("live", "newsletter_signup")
    assert made[0][:2] == ("held-out", "extract_article_metadata") and made[0][2] > 10
    without = TaskSetResource(intents=narrowed.intents, articles_per_site=2, reserve=False)
    no_reserve = {**resources, "tasks": without}
    result = run_site(no_reserve, instance, "isar", day, selection=["feed_items", "news_tasks"])
    assert result.success
    assert query(db, "SELECT DISTINCT suite FROM newsbench.news_tasks") == [("live",)]
    with pytest.raises(ValueError, match="unknown intent.*find_the_moon"):
        TaskSetResource(intents=["find_top_headline", "find_the_moon"])
