"""A backfill of one site over two days, launched the way the UI launches it: a
`launchPartitionBackfill` GraphQL mutation against a running `dagster dev` (webserver and
daemon), which queues real runs in run-worker processes, two at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import urllib.request

import duckdb
import pytest

from newsbench_dagster.paths import DAGSTER_HOME, PROJECT_ROOT
from tests.support.net import free_port
from tests.support.services import stop_group
from tests.support.tasks import LEAD_AND_METADATA

pytestmark = pytest.mark.heavy(100)  # about 100 s on two busy cores

DAYS = ["2026-11-29", "2026-11-30"]

LAUNCH = """
mutation($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message stack }
    ... on PartitionSetNotFoundError { message }
  }
}"""
STATUS = """
query($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    ... on PartitionBackfill { status numPartitions
      runs(limit: 10) { id status startTime endTime } }
    ... on PythonError { message }
  }
}"""


def _graphql(port: int, query: str, variables: dict) -> dict:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query, "variables": variables}).encode(),
        headers={"Content-Type": "application/json"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=30) as resp:
        body = json.loads(resp.read())
    assert "errors" not in body, body
    return body["data"]


@pytest.fixture
def dagster_dev(tmp_path, newsroom):
    home = tmp_path / "home"
    home.mkdir()
    # The project's instance, but two runs at once: the runs share this test's newsroom (the
    # shipped instance keeps daemon runs one at a time because each may host its own), the
    # warehouse by taking turns, the browser pool's two slots.
    shipped = (DAGSTER_HOME / "dagster.yaml").read_text()
    assert "max_concurrent_runs: 1" in shipped
    (home / "dagster.yaml").write_text(
        shipped.replace("max_concurrent_runs: 1", "max_concurrent_runs: 2")
    )
    # A code location like the real one, writing to this test's warehouse and artifact folder.
    (tmp_path / "ui_defs.py").write_text(
        textwrap.dedent(f"""
        from newsbench_dagster.definitions import build_definitions
        from newsbench_dagster.definitions import RESOURCES_LOCAL
        from newsbench_dagster.resources import (
            ArtifactStoreResource, BrowserResource, NewsroomResource, TaskSetResource,
            duckdb_warehouse)

        defs = build_definitions({{
            **RESOURCES_LOCAL,
            "io_manager": duckdb_warehouse({str(tmp_path / "wh.duckdb")!r}),
            "artifacts": ArtifactStoreResource(root={str(tmp_path / "art")!r}),
            "newsroom": NewsroomResource(port={newsroom.port}),
            # What is tested is the backfill; traces and screenshots are tested elsewhere.
            "browser": BrowserResource(artifacts=[], screenshot=False),
            # ...and every intent through Dagster in test_pipeline.
            "tasks": TaskSetResource(intents={list(LEAD_AND_METADATA)!r}),
        }})
    """)
    )
    (tmp_path / "workspace.yaml").write_text(
        f"load_from:\n  - python_file:\n      relative_path: ui_defs.py\n"
        f"      location_name: newsbench\n      working_directory: {PROJECT_ROOT}\n"
    )
    port = free_port()
    log = open(tmp_path / "dagster_dev.log", "wb")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dagster",
            "dev",
            "-w",
            str(tmp_path / "workspace.yaml"),
            "-p",
            str(port),
            "-h",
            "127.0.0.1",
        ],
        cwd=tmp_path,
        env={**os.environ, "DAGSTER_HOME": str(home)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            _graphql(port, "{ version }", {})
            break
        except OSError:
            time.sleep(1)
    else:
        proc.kill()
        pytest.fail("dagster dev did not come up:\n" + (tmp_path / "dagster_dev.log").read_text())
    yield port, tmp_path
    stop_group(proc)
    log.close()


def test_backfill_one_site_over_two_days_from_the_ui(dagster_dev):
    port, tmp_path = dagster_dev
    params = {
        "selector": {
            "partitionSetName": "site_day_job_partition_set",
            "repositorySelector": {
                "repositoryLocationName": "newsbench",
                "repositoryName": "__repository__",
            },
        },
        "partitionNames": [f"{d}|harbor" for d in DAYS],
    }
    launched = _graphql(port, LAUNCH, {"params": params})["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    deadline, status = time.monotonic() + 420, None
    while time.monotonic() < deadline:
        status = _graphql(port, STATUS, {"id": launched["backfillId"]})["partitionBackfillOrError"]
        runs = status.get("runs") or []
        if len(runs) == 2 and all(r["status"] in ("SUCCESS", "FAILURE", "CANCELED") for r in runs):
            break
        time.sleep(2)
    log = (tmp_path / "dagster_dev.log").read_text()[-3000:]
    assert status and [r["status"] for r in status["runs"]] == ["SUCCESS", "SUCCESS"], (status, log)
    # The queue ran the two partitions at once, sharing the warehouse and the browser pool.
    (a0, a1), (b0, b1) = sorted((r["startTime"], r["endTime"]) for r in status["runs"])
    assert b0 < a1, f"the backfill's runs did not overlap: {status['runs']}"
    with duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT strftime(day, '%Y-%m-%d'), site, count(*), "
            "sum(success::INT) FROM newsbench.run_scores GROUP BY ALL "
            "ORDER BY 1"
        ).fetchall()
    assert [(d, s) for d, s, _, _ in rows] == [(d, "harbor") for d in DAYS]
    assert all(n >= 4 and wins / n >= 0.9 for _, _, n, wins in rows), rows
    # The backfill selected only the site-day assets; each day's KPI rollup and report follow
    # by the `kpis_follow_scores` automation sensor, on by default.
    deadline, kpis, reports = time.monotonic() + 240, [], []
    while time.monotonic() < deadline:
        kpis = _kpi_days(tmp_path / "wh.duckdb")
        reports = sorted(p.parent.name for p in (tmp_path / "art" / "reports").glob("*/index.html"))
        if kpis == [(d, n) for d, _, n, _ in rows] and reports == DAYS:
            break
        time.sleep(3)
    log = (tmp_path / "dagster_dev.log").read_text()[-3000:]
    assert kpis == [(d, n) for d, _, n, _ in rows], (kpis, log)
    assert reports == DAYS, (reports, log)


def _kpi_days(db) -> list[tuple[str, int]]:
    """(day, scored runs) of harbor's `all` slice in kpi_daily, once the warehouse can be read."""
    try:
        with duckdb.connect(str(db), read_only=True) as con:
            return con.execute(
                "SELECT strftime(day, '%Y-%m-%d'), n_runs FROM newsbench.kpi_daily "
                "WHERE site = 'harbor' AND slice_kind = 'all' ORDER BY 1"
            ).fetchall()
    except duckdb.Error:  # the table is not there yet, or a run is writing it
        return []
