"""The drift gate in real Dagster materializations: a newsroom with its clock frozen, real
Chromium, a real DuckDB file. Harbor the day before its redesign, then the day of it: the
second row has the template change and the (non-blocking) check warns naming harbor."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime

import duckdb
import pytest
from dagster import (
    AssetCheckSeverity,
    AssetKey,
    MultiPartitionKey,
    instance_for_test,
    load_assets_from_modules,
    materialize,
)

from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.defs.drift import assets as drift
from newsbench_dagster.defs.drift.checks import drift as drift_check
from newsbench_dagster.defs.evaluation import assets as evaluation
from newsbench_dagster.defs.ingest import assets as ingest
from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom
from newsbench_dagster.paths import AGENTS_DIR
from newsbench_dagster.resources import AgentRegistryResource, BrowserResource, TaskSetResource
from tests.support.pipeline_resources import local_resources
from tests.support.tasks import LEAD_AND_METADATA

pytestmark = pytest.mark.heavy(15)  # about 15 s on two busy cores

# The site chain and the drift gate only (not the whole graph of definitions.py).
ASSETS = load_assets_from_modules([ingest, evaluation, drift])
DRIFT_CHECKS = [drift_check]
SELECTION = ["feed_items", "news_tasks", "agent_runs", "run_scores", "site_drift"]
# Harbor (New York) serves template v2 from its local 2026-11-16.
BEFORE = datetime(2026, 11, 15, 15, 0, tzinfo=UTC)
AFTER = datetime(2026, 11, 16, 15, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def frozen() -> Iterator[tuple[NewsroomServer, FixedClock]]:
    clock = FixedClock(BEFORE)
    with NewsroomServer(Newsroom(seed=7), clock=clock) as server:
        yield server, clock


@pytest.fixture
def env(frozen, tmp_path):
    server, clock = frozen
    agents = tmp_path / "agents"  # the reference agent only: one run per task
    agents.mkdir()
    shutil.copy(AGENTS_DIR / "reference.yaml", agents / "reference.yaml")
    resources = local_resources(
        tmp_path / "wh.duckdb",
        tmp_path / "artifacts",
        port=server.port,
        seed=server.newsroom.seed,
        browser=BrowserResource(concurrency=4, screenshot=False, artifacts=[]),
        agents=AgentRegistryResource(directory=str(agents)),
        # What drifts is the front page's template: the lead and metadata tasks read it.
        tasks=TaskSetResource(intents=list(LEAD_AND_METADATA)),
    )
    with instance_for_test() as instance:
        yield resources, tmp_path, instance, clock


def run_day(resources, instance, day: str):
    return materialize(
        [*ASSETS, *DRIFT_CHECKS],
        selection=SELECTION,
        partition_key=MultiPartitionKey({"site": "harbor", "day": day}),
        resources=resources,
        instance=instance,
        raise_on_error=False,
    )


def test_harbor_redesign_is_flagged_by_the_drift_check(env):
    resources, tmp_path, instance, clock = env

    clock.set(BEFORE)
    first = run_day(resources, instance, "2026-11-15")
    assert first.success
    (check,) = first.get_asset_check_evaluations()
    assert check.passed, check.description  # a first day has nothing to differ from

    clock.set(AFTER)
    second = run_day(resources, instance, "2026-11-16")
    assert second.success  # the check warns, it does not block
    (check,) = second.get_asset_check_evaluations()
    assert check.passed is False and check.severity == AssetCheckSeverity.WARN
    assert "harbor" in check.description and "template changed" in check.description
    assert check.metadata["template_changed"].value is True

    with duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT day, fingerprint, previous_fingerprint, template_changed, feed_items, "
            "baseline_version, baseline_success, baseline_delta, drifted, typeof(day) "
            "FROM newsbench.site_drift WHERE site = 'harbor' ORDER BY day"
        ).fetchall()
    assert [r[0].date().isoformat() for r in rows] == ["2026-11-15", "2026-11-16"]
    day1, day2 = rows
    assert day1[3] is False and day1[2] is None and day1[-1] == "TIMESTAMP"
    assert day2[3] is True and day2[2] == day1[1] != day2[1]
    assert day1[4] > 0 and day1[5].startswith("reference@")
    # The reference agent reads metadata first: the redesign does not bring it down, so
    # harbor is flagged but stays gated.
    assert day1[6] is not None and day2[6] is not None and day2[8] is False
    assert day2[7] == pytest.approx(day2[6] - day1[6])

    mat = instance.get_latest_materialization_event(AssetKey("site_drift")).asset_materialization
    assert mat.metadata["template_changed"].value is True
    assert "harbor" in mat.metadata["reasons"].value
    history = LocalArtifactStore(tmp_path / "artifacts").read_json("drift/harbor/history.json")
    assert sorted(history) == ["2026-11-15", "2026-11-16"]
