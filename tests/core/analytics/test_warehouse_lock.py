"""Processes taking turns on the DuckDB warehouse: a second writer waits for the first instead
of failing on DuckDB's file lock; readers share; a lock held too long is a clear error."""

from __future__ import annotations

import multiprocessing
import time

import duckdb
import pytest

from newsbench_dagster.core.analytics.warehouse import reading
from newsbench_dagster.core.analytics.warehouse_lock import WarehouseBusy, warehouse_turn

HOLD_S = 1.0


def _hold_and_write(db: str, started, value: int) -> None:
    """Take the warehouse, say so, keep it open for HOLD_S, write one row."""
    with warehouse_turn(db), duckdb.connect(db) as con:
        started.set()
        con.execute("CREATE TABLE IF NOT EXISTS t (v INT)")
        time.sleep(HOLD_S)
        con.execute("INSERT INTO t VALUES (?)", [value])


def test_a_second_writer_waits_its_turn_and_both_rows_land(tmp_path):
    db = str(tmp_path / "wh.duckdb")
    ctx = multiprocessing.get_context("spawn")
    started = ctx.Event()
    first = ctx.Process(target=_hold_and_write, args=(db, started, 1))
    first.start()
    assert started.wait(30)
    # Without the turn, opening the file now fails: DuckDB's own lock is held by the first.
    with pytest.raises(duckdb.IOException, match="lock"):
        duckdb.connect(db)
    t0 = time.monotonic()
    with warehouse_turn(db) as waited, duckdb.connect(db) as con:
        con.execute("INSERT INTO t VALUES (2)")
    first.join(30)
    assert first.exitcode == 0
    assert waited > 0.3 and time.monotonic() - t0 < HOLD_S + 5
    with reading(db) as con:
        assert sorted(con.execute("SELECT v FROM t").fetchall()) == [(1,), (2,)]


def test_readers_share_and_a_stuck_holder_is_named(tmp_path):
    db = tmp_path / "wh.duckdb"
    duckdb.connect(str(db)).close()
    with warehouse_turn(db, shared=True), warehouse_turn(db, shared=True, wait_s=0.2) as w:
        assert w < 0.2  # two readers at once
        # A writer waits for the readers, then gives up naming the file.
        with pytest.raises(WarehouseBusy, match=str(db)), warehouse_turn(db, wait_s=0.2):
            pass
