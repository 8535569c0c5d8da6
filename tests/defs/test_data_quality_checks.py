"""The data-quality gates through real Dagster materializations on a real DuckDB file: the
upstream rows are written straight into the warehouse, the asset and its check materialize,
and a failing suite blocks the run with the failing expectation named in the metadata."""

from __future__ import annotations

import duckdb
import pytest
from dagster import AssetKey, MultiPartitionKey, instance_for_test, materialize

from newsbench_dagster.core.analytics import tables
from newsbench_dagster.core.analytics.data_quality import A_AT_LEAST_B, BETWEEN, UNIQUE
from newsbench_dagster.definitions import ASSETS, RESOURCES_LOCAL
from newsbench_dagster.defs.quality.checks import kpi_daily_quality, run_scores_quality
from newsbench_dagster.resources import duckdb_warehouse
from newsbench_dagster.resources.warehouse import DATASET

# Two real materializations: about 20 s on two busy cores.
pytestmark = pytest.mark.heavy(20)

DAY = "2026-11-02"

DATA_QUALITY_CHECKS = [run_scores_quality, kpi_daily_quality]


@pytest.fixture
def warehouse(tmp_path):
    db = tmp_path / "wh.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(f"CREATE SCHEMA {DATASET}")
        for table in ("news_tasks", "agent_runs", "run_scores"):
            con.execute(tables.ddl(table, DATASET))
    with instance_for_test() as instance:
        # Only the warehouse is used: the other resources are declared by unselected assets.
        yield db, {**RESOURCES_LOCAL, "io_manager": duckdb_warehouse(str(db))}, instance


def insert(db, table: str, rows: list[dict]) -> None:
    df = tables.frame(table, rows)  # noqa: F841 - read by DuckDB's replacement scan
    with duckdb.connect(str(db)) as con:
        con.execute(f"INSERT INTO {DATASET}.{table} BY NAME SELECT * FROM df")


def task(task_id: str, site: str = "harbor") -> dict:
    return {"task_id": task_id, "site": site, "day": DAY, "intent": "find_top_headline"}


def score(run_id: str, task_id: str, success: bool, site: str = "harbor") -> dict:
    return {
        "run_id": run_id,
        "task_id": task_id,
        "site": site,
        "day": DAY,
        "intent": "find_top_headline",
        "agent_name": "reference",
        "agent_version": "reference@1",
        "trial": 0,
        "accuracy": 1.0 if success else 0.0,
        "timeliness": 0.9,
        "efficiency": 0.8,
        "reward": 0.95 if success else 0.1,
        "success": success,
        "excluded": False,
        "failure_class": "success" if success else "wrong_target",
        "ttfc_seconds": 2.0 if success else None,
        "steps": 3,
        "tokens": 0,
        "requests": 4,
        "safety_incidents": 0,
        "claim_mismatch": False,
    }


def site_down_run(run_id: str, task_id: str) -> dict:
    """An agent_runs row the scorer excludes without needing a page: the site was down."""
    return {
        "run_id": run_id,
        "task_id": task_id,
        "site": "harbor",
        "day": DAY,
        "intent": "find_top_headline",
        "agent_name": "reference",
        "agent_version": "reference@1",
        "trial": 0,
        "run_status": "env_failure",
        "env_failure": "site_down",
        "error": "503 from harbor-herald.test",
        "steps": 0,
        "tokens": 0,
        "requests": 1,
        "safety_events": [],
    }


def materialize_kpis(resources, instance):
    return materialize(
        [*ASSETS, *DATA_QUALITY_CHECKS],
        selection=[AssetKey("kpi_daily")],
        partition_key=DAY,
        resources=resources,
        instance=instance,
        raise_on_error=False,
    )


def evaluation(result, check: str):
    (found,) = [e for e in result.get_asset_check_evaluations() if e.check_name == check]
    return found


def test_kpi_daily_quality_passes_then_blocks_coverage_above_one(warehouse):
    db, resources, instance = warehouse
    insert(db, "news_tasks", [task("t1"), task("t2"), task("t9", site="isar")])
    insert(db, "run_scores", [score("r1", "t1", True), score("r2", "t2", False)])

    result = materialize_kpis(resources, instance)
    assert result.success
    check = evaluation(result, "kpi_daily_quality")
    assert check.passed and check.metadata["failed"].value == 0
    assert check.metadata["evaluated"].value > 0

    # Runs scored on a task that day's news_tasks does not hold: coverage 3/2 for harbor.
    insert(db, "run_scores", [score("r3", "t3", True)])
    result = materialize_kpis(resources, instance)
    assert not result.success  # blocking: the failed gate fails the run
    check = evaluation(result, "kpi_daily_quality")
    assert not check.passed and check.severity.value == "ERROR"
    failures = check.metadata["failures"].value
    assert [(f["expectation"], f["column"]) for f in failures] == [(BETWEEN, "coverage")]
    assert failures[0]["observed"]["partial_unexpected_list"] == [1.5]
    assert {"site": "harbor"}.items() <= failures[0]["observed"]["rows"][0].items()
    assert "coverage" in check.description and BETWEEN in check.description
    assert BETWEEN in check.metadata["failures_table"].value
    assert A_AT_LEAST_B not in check.metadata["failures_table"].value


def test_run_scores_quality_passes_then_blocks_a_duplicate_run(warehouse):
    db, resources, instance = warehouse
    partition = MultiPartitionKey({"site": "harbor", "day": DAY})
    insert(db, "news_tasks", [task("t1")])
    insert(db, "agent_runs", [site_down_run("r1", "t1"), site_down_run("r2", "t1")])

    def run():
        return materialize(
            [*ASSETS, *DATA_QUALITY_CHECKS],
            selection=[AssetKey("run_scores")],
            partition_key=partition,
            resources=resources,
            instance=instance,
            raise_on_error=False,
        )

    result = run()
    assert result.success
    check = evaluation(result, "run_scores_quality")
    assert check.passed and check.metadata["rows"].value == 2

    # The same run twice in agent_runs: the scorer writes two scores with one run id.
    insert(db, "agent_runs", [site_down_run("r1", "t1")])
    result = run()
    assert not result.success
    check = evaluation(result, "run_scores_quality")
    assert not check.passed
    (failure,) = check.metadata["failures"].value
    assert (failure["expectation"], failure["column"]) == (UNIQUE, "run_id")
    assert failure["observed"]["unexpected_count"] == 2
    assert check.description.startswith("1 of ") and UNIQUE in check.description
