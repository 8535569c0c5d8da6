"""Readers never stand in a writer's way: Newsbench's readers (`newsbench kpis` here) read the
snapshot each committed write publishes, so a read during a write answers at once with what was
committed; a process outside Newsbench holding the warehouse file is waited for by name."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from newsbench_dagster.core.analytics import snapshot, tables
from newsbench_dagster.core.analytics.warehouse import SCHEMA
from newsbench_dagster.core.analytics.warehouse_lock import WarehouseBusy, warehouse_turn

# Real writes racing readers of the warehouse: about 20 s on two busy cores.
pytestmark = pytest.mark.heavy(20)

DAY = "2026-11-30"
NEWSBENCH = str(Path(sys.executable).parent / "newsbench")


def write_kpi_row(db: str, site: str, ready=None, go=None) -> None:
    """What the IO manager does for one partition (`TakingTurnsDuckDbClient.connect`): the
    writers' turn, then a transaction; here it stays open until `go`."""
    with warehouse_turn(db), snapshot.writing(db), duckdb.connect(db) as con:
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        con.execute(tables.ddl("kpi_daily", SCHEMA))
        con.begin()
        con.execute(
            f"INSERT INTO {SCHEMA}.kpi_daily BY NAME SELECT ? AS day, ? AS site, "
            "'reference@1+abc' AS agent_version, 'all' AS slice_kind, '*' AS slice_value, "
            "4 AS n_runs, 4 AS n_scored, 0 AS n_env_failures, 0 AS n_void, 3 AS successes, "
            "0.75 AS success_rate, 0.3 AS success_ci_low, 0.95 AS success_ci_high, "
            "0.7 AS mean_reward, 1.5 AS ttfc_p50, 2.5 AS ttfc_p95, 4 AS tasks_run, "
            "4 AS tasks_generated",
            [datetime.fromisoformat(DAY), site],
        )
        if ready is not None:
            ready.set()
            assert go.wait(60)
        con.commit()


def kpis(db: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [NEWSBENCH, "kpis", "--day", DAY, "--warehouse", str(db)],
        capture_output=True,
        text=True,
        timeout=30,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )


def _hold_open(db: str, ready, go, read_only: bool) -> None:
    with duckdb.connect(db, read_only=read_only):
        ready.set()
        go.wait(60)


def test_kpis_during_a_write_answers_from_what_was_committed(tmp_path):
    db = tmp_path / "wh.duckdb"
    write_kpi_row(str(db), "harbor")
    assert snapshot.is_current(db)

    ctx = multiprocessing.get_context("spawn")
    ready, go = ctx.Event(), ctx.Event()
    writer = ctx.Process(target=write_kpi_row, args=(str(db), "lac", ready, go))
    writer.start()
    try:
        assert ready.wait(30)
        # The writer holds the turn and DuckDB's lock, its row not committed: the read does
        # not wait for it (it did, up to 300 s, then a traceback) and shows what was committed.
        t0 = time.monotonic()
        during = kpis(db)
        assert time.monotonic() - t0 < 20
        assert during.returncode == 0, during.stderr
        assert "Traceback" not in during.stderr
        assert "harbor" in during.stdout and "3/4 = 0.75" in during.stdout
        assert "lac" not in during.stdout
    finally:
        go.set()
        writer.join(30)
    assert writer.exitcode == 0
    after = kpis(db)
    assert after.returncode == 0 and "lac" in after.stdout and "harbor" in after.stdout

    # A program outside Newsbench with the warehouse open to write (it takes no turn): the
    # read still answers, from the snapshot (DuckDB's lock error was a traceback).
    ready, go = ctx.Event(), ctx.Event()
    outsider = ctx.Process(target=_hold_open, args=(str(db), ready, go, False))
    outsider.start()
    try:
        assert ready.wait(30)
        held = kpis(db)
        assert held.returncode == 0, held.stderr
        assert "lac" in held.stdout and "Traceback" not in held.stderr
    finally:
        go.set()
        outsider.join(30)


def test_a_stale_snapshot_is_refreshed_and_a_reader_that_waits_says_so(tmp_path):
    db = tmp_path / "wh.duckdb"
    with duckdb.connect(str(db)) as con:  # written before snapshots existed: none yet
        con.execute("CREATE TABLE t AS SELECT 1 AS v")
    assert not snapshot.is_current(db)
    ctx = multiprocessing.get_context("spawn")
    ready, go = ctx.Event(), ctx.Event()
    writer = ctx.Process(target=_hold_turn, args=(str(db), ready, go))
    writer.start()
    try:
        assert ready.wait(30)
        said: list[str] = []
        releaser = threading.Timer(1.0, go.set)
        releaser.start()
        path = snapshot.current(db, say=said.append)
        releaser.join(10)
    finally:
        go.set()
        writer.join(30)
    assert said and said[0].startswith(f"waiting for the warehouse ({db})")
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT v FROM t").fetchall() == [(1,)]
    assert snapshot.is_current(db)


def _hold_turn(db: str, ready, go) -> None:
    with warehouse_turn(db):
        ready.set()
        go.wait(60)


def test_a_writer_waits_for_an_outside_reader_and_names_it(tmp_path):
    db = tmp_path / "wh.duckdb"
    duckdb.connect(str(db)).close()
    ctx = multiprocessing.get_context("spawn")
    ready, go = ctx.Event(), ctx.Event()
    reader = ctx.Process(target=_hold_open, args=(str(db), ready, go, True))
    reader.start()
    try:
        assert ready.wait(30)
        (holder,) = snapshot.holders(db)
        assert holder.pid == reader.pid and not holder.writing
        said: list[str] = []
        with pytest.raises(WarehouseBusy, match=f"pid {reader.pid}"):
            snapshot.wait_for_outsiders(db, said.append, wait_s=0.5)
        assert f"waiting for {db}: held by pid {reader.pid}" in said[0]
        assert "wh.read.duckdb" in said[0]
    finally:
        go.set()
        reader.join(30)
    assert snapshot.holders(db) == []
    assert snapshot.wait_for_outsiders(db, said.append, wait_s=0.5) < 0.1
