"""A reader outside Newsbench (an analyst's `duckdb` shell, a notebook) holding the warehouse file
open while the pipeline writes a partition: real Dagster materializations of one site's feed and
tasks (no browser), a real second process holding DuckDB's read-only connection. The write waits
for it, saying which process it is, and goes on as soon as it closes; readers then find the
partition in the snapshot."""

from __future__ import annotations

import multiprocessing
import threading
import time

import duckdb
import pytest
from dagster import MultiPartitionKey, instance_for_test, materialize

from newsbench_dagster.core.analytics import snapshot
from newsbench_dagster.core.analytics.warehouse import table_rows
from newsbench_dagster.definitions import ASSETS
from newsbench_dagster.resources import TaskSetResource
from tests.support.pipeline_resources import local_resources

# A real run waiting on an outside reader: about 15 s on two busy cores.
pytestmark = pytest.mark.heavy(15)

DAY = "2026-11-29"


def _hold_read_only(db: str, ready, go) -> None:
    with duckdb.connect(db, read_only=True) as con:
        con.execute("SELECT count(*) FROM newsbench.feed_items").fetchall()
        ready.set()
        go.wait(120)


def _waiting_messages(instance) -> list[str]:
    runs = instance.get_runs(limit=1)
    if not runs:
        return []
    return [
        e.user_message
        for e in instance.all_logs(runs[0].run_id)
        if "waiting for" in (e.user_message or "")
    ]


def test_a_write_waits_for_an_outside_reader_by_name_and_lands_when_it_closes(newsroom, tmp_path):
    db = tmp_path / "wh.duckdb"
    resources = local_resources(  # the browser is not started: no browser step is selected
        db,
        tmp_path / "artifacts",
        port=newsroom.port,
        seed=newsroom.newsroom.seed,
        tasks=TaskSetResource(intents=["find_top_headline"]),
    )

    def run(site: str):
        return materialize(
            ASSETS,
            selection=["feed_items", "news_tasks"],
            partition_key=MultiPartitionKey({"site": site, "day": DAY}),
            resources=resources,
            instance=instance,
            raise_on_error=False,
        )

    with instance_for_test() as instance:
        assert run("harbor").success
        assert snapshot.is_current(db)

        ctx = multiprocessing.get_context("spawn")
        ready, go = ctx.Event(), ctx.Event()
        reader = ctx.Process(target=_hold_read_only, args=(str(db), ready, go))
        reader.start()
        closed_at: list[float] = []

        def close_reader_once_the_writer_says_it_waits() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not _waiting_messages(instance):
                time.sleep(0.2)
            closed_at.append(time.monotonic())
            go.set()

        try:
            assert ready.wait(30)
            closer = threading.Thread(target=close_reader_once_the_writer_says_it_waits)
            closer.start()
            result = run("lac")
            finished = time.monotonic()
            closer.join(130)
        finally:
            go.set()
            reader.join(30)
        said = _waiting_messages(instance)

    assert result.success
    assert said, "the writer never said it was waiting"
    assert f"waiting for {db}: held by pid {reader.pid}" in said[0]
    assert "read-only" in said[0] and str(snapshot.snapshot_path(db)) in said[0]
    # The reader really was in the way until it closed, and the writes landed after it.
    assert closed_at and finished > closed_at[0]
    lac = table_rows(db, "feed_items", "site = ?", ["lac"])
    assert lac and snapshot.is_current(db)
    assert {r["site"] for r in table_rows(db, "news_tasks", "TRUE", [])} == {"harbor", "lac"}
