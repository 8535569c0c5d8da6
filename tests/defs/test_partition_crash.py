"""A re-materialization killed half-way leaves the partition consistent (issue #21, defect 3).

Real Dagster materializations of one site-day partition on a real DuckDB file and artifact
folder: evaluated once, then re-evaluated after the feeds moved in a process killed with
SIGKILL at one of three points (`core.crash_points`): when a run of `agent_runs` is done (the
browser still at work), inside the warehouse's transaction writing `agent_runs`, and half-way
through writing an artifact. After the kill, what the warehouse holds is consistent (no run of
a task that is gone, every artifact a row names is the one that row's run wrote); after a
re-run, every row is there once and the partition's artifact folder holds exactly what its rows
name, nothing a killed attempt left.
"""

from __future__ import annotations

import json
import shutil
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from newsbench_dagster.core.artifacts import local_path
from newsbench_dagster.newsroom.clock import FixedClock
from tests.support import partition_run
from tests.support.killed import run_module
from tests.support.tasks import LEAD_AND_METADATA

pytestmark = pytest.mark.heavy(60)  # one evaluation, then four tests of 10-15 s

SITE = "harbor"


@pytest.fixture(scope="module")
def evaluated(newsroom_server, tmp_path_factory):
    """The partition evaluated once, on the newsroom 14 hours ago, and kept aside: each test
    starts from a copy of it at the same paths (rows name their artifacts by absolute path)."""
    now = datetime.now(UTC).replace(microsecond=0)
    work = tmp_path_factory.mktemp("partition")
    saved = tmp_path_factory.mktemp("evaluated") / "copy"
    home = work / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    spec = {
        "db": str(work / "wh.duckdb"),
        "artifacts": str(work / "artifacts"),
        "port": newsroom_server.port,
        "seed": newsroom_server.newsroom.seed,
        "site": SITE,
        "day": now.date().isoformat(),
        "intents": list(LEAD_AND_METADATA),
    }
    live, newsroom_server.clock = newsroom_server.clock, FixedClock(now - timedelta(hours=14))
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("DAGSTER_HOME", str(home))
            assert _materialize(spec) == 0
    finally:
        newsroom_server.clock = live
    before = _consistent(spec)
    assert len(before) >= 2
    _no_leftovers(spec, before)
    shutil.copytree(work, saved)
    return spec, work, saved, before, now


@pytest.fixture
def partition(evaluated, newsroom, monkeypatch):
    """(spec, newsroom, the runs of the first evaluation, now): the evaluated partition, the
    newsroom's clock where it was evaluated."""
    spec, work, saved, before, now = evaluated
    shutil.rmtree(work)
    shutil.copytree(saved, work)
    monkeypatch.setenv("DAGSTER_HOME", str(work / "home"))
    live, newsroom.clock = newsroom.clock, FixedClock(now - timedelta(hours=14))
    try:
        yield spec, newsroom, before, now
    finally:
        newsroom.clock = live


def _materialize(spec: dict, crash_at: str | None = None) -> int:
    """The partition materialized: here, or in a process killed at `crash_at`; its exit code."""
    if crash_at is None:
        return 0 if partition_run.run(spec) else 1
    return run_module("tests.support.partition_run", spec, crash_at)


def _rows(spec: dict, table: str) -> pd.DataFrame:
    with duckdb.connect(spec["db"], read_only=True) as con:
        return con.execute(
            f"SELECT * FROM newsbench.{table} WHERE site = ? AND day = ?",
            [spec["site"], pd.Timestamp(spec["day"])],
        ).fetchdf()


def _artifact_uris(row) -> list[str]:
    artifacts = json.loads(row["artifacts"]) if isinstance(row["artifacts"], str) else {}
    return [u for v in artifacts.values() for u in (v if isinstance(v, list) else [v]) if u]


def _consistent(spec: dict) -> pd.DataFrame:
    """What the warehouse holds for the partition is consistent: every row once, no run of a
    task that is gone, no score of a run that is gone, and every artifact a run's row names
    exists and is its run's (run.json names the row's run, task and start)."""
    tasks, runs, scores = (_rows(spec, t) for t in ("news_tasks", "agent_runs", "run_scores"))
    assert tasks["task_id"].is_unique and runs["run_id"].is_unique
    assert scores["run_id"].is_unique
    orphan_runs = set(runs["task_id"]) - set(tasks["task_id"])
    assert not orphan_runs, f"runs of tasks that no longer exist: {orphan_runs}"
    assert set(scores["run_id"]) <= set(runs["run_id"]), "scores of runs that no longer exist"
    for _, row in runs.iterrows():
        uris = _artifact_uris(row)
        assert uris, row["run_id"]
        for uri in uris:
            assert local_path(uri).is_file(), f"{row['run_id']}: {uri} is missing"
        written = json.loads(local_path(json.loads(row["artifacts"])["run"]).read_bytes())
        assert (written["run_id"], written["task_id"]) == (row["run_id"], row["task_id"])
        started = pd.Timestamp(written["started_at"]).tz_convert(None)
        assert started == row["started_at"], f"{row['run_id']}: run.json is another attempt's"
    feeds = _rows(spec, "feed_items")
    for uri in set(feeds["raw_uri"].dropna()):
        assert local_path(uri).is_file(), f"feed bytes a row names are missing: {uri}"
    return runs


def _starts(runs: pd.DataFrame) -> dict:
    return dict(zip(runs["run_id"], runs["started_at"], strict=True))


def _no_leftovers(spec: dict, runs: pd.DataFrame) -> None:
    """Every file in the partition's artifact folders is one a row names, or in the folder of a
    run a row names: nothing is left of an earlier attempt or of a killed one (not even a
    temporary file)."""
    folder = Path(spec["artifacts"]) / "runs" / spec["site"] / spec["day"]
    named = {local_path(json.loads(a)["run"]).parent for a in runs["artifacts"]}
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files
    left = [str(p.relative_to(folder)) for p in files if not named & set(p.parents)]
    assert not left, f"run files no row names: {left}"
    folder = Path(spec["artifacts"]) / "feeds" / spec["site"] / spec["day"]
    named = {local_path(u) for u in _rows(spec, "feed_items")["raw_uri"].dropna()}
    files = {p for p in folder.rglob("*") if p.is_file()}
    assert files and files == named, f"feed files no row names: {files - named}"


@pytest.mark.parametrize(
    "crash_at",
    ["agent_run_done", "warehouse_write:agent_runs", "artifact_write:run.json"],
)
def test_a_killed_re_materialization_leaves_the_partition_consistent(partition, crash_at):
    spec, newsroom, before, now = partition
    newsroom.clock = FixedClock(now)  # the feeds have moved on: other articles, other tasks
    assert _materialize(spec, crash_at) == -signal.SIGKILL, f"not killed at {crash_at}"
    killed = _consistent(spec)
    # The re-run rewrote the partition's tasks: the runs of the old ones went with them.
    assert set(_rows(spec, "news_tasks")["task_id"]) != set(before["task_id"])
    assert killed.empty

    assert _materialize(spec) == 0
    after = _consistent(spec)
    tasks = _rows(spec, "news_tasks")
    daily = tasks[tasks["suite"] == "live"]  # the reserve beside them is the gate's, never run
    assert len(after) == len(daily) == len(_rows(spec, "run_scores")) < len(tasks)
    _no_leftovers(spec, after)


def test_a_killed_re_run_of_agent_runs_keeps_the_rows_and_artifacts_it_would_replace(partition):
    """Re-executing the runs alone (the UI's "re-execute from failure"), killed inside the
    warehouse's transaction: the rows it would have replaced stay, with their own artifacts."""
    spec, _, before, _ = partition
    again = {**spec, "selection": ["agent_runs", "run_scores"]}
    assert _materialize(again, "warehouse_write:agent_runs") == -signal.SIGKILL
    kept = _consistent(spec)  # every run.json still the committed run's (same start)
    assert _starts(kept) == _starts(before)

    assert _materialize(again) == 0
    after = _consistent(spec)
    assert set(after["run_id"]) == set(before["run_id"])
    assert all(after["started_at"] > before["started_at"].max())
    _no_leftovers(spec, after)
