"""What publishing the warehouse's read snapshot costs a write (`core.analytics.snapshot`):
a DuckDB warehouse grown to each size, then `publish` (copy under a temporary name, rename)
timed as a writer does it, holding the writers' turn, `--rounds` times per size.

A measurement, not a test: numbers depend on the machine and its disk.

    uv run python benchmarks/warehouse_snapshot.py [--sizes 3,32,256] [--rounds 15]
    uv run python benchmarks/warehouse_snapshot.py --warehouse data/warehouse.duckdb
    uv run python benchmarks/warehouse_snapshot.py --smoke   # 1 MB, 3 rounds

The last line printed is the cost per MB at the largest size.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import duckdb
from common import parse_args

from newsbench_dagster.core.analytics import snapshot
from newsbench_dagster.core.analytics.warehouse_lock import warehouse_turn

MB = 2**20


def grow(db: Path, size_mb: float) -> None:
    """Rows of text (as agent_runs' JSON columns are) until the file is `size_mb`."""
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE IF NOT EXISTS runs (i BIGINT, body VARCHAR)")
        while db.stat().st_size < size_mb * MB:
            con.execute(
                "INSERT INTO runs SELECT i, repeat(md5(random()::VARCHAR), 8) "
                "FROM range(20000) r(i)"
            )
            con.execute("CHECKPOINT")


def timed(db: Path, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        with warehouse_turn(db):
            out.append(snapshot.publish(db) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3,32,256", help="warehouse sizes, MB")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--warehouse", type=Path, help="time this warehouse instead")
    args = parse_args(parser, sizes="1", rounds=3, warehouse=None)
    print(f"{'MB':>8} {'median ms':>10} {'max ms':>8} {'ms/MB':>7}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        targets = (
            [(args.warehouse, None)]
            if args.warehouse
            else [(Path(tmp) / "wh.duckdb", float(s)) for s in args.sizes.split(",")]
        )
        for db, size in targets:
            if size is not None:
                grow(db, size)
            ms = timed(db, args.rounds)
            mb = db.stat().st_size / MB
            rows.append((mb, statistics.median(ms)))
            print(f"{mb:8.1f} {statistics.median(ms):10.2f} {max(ms):8.2f} {rows[-1][1] / mb:7.2f}")
    mb, median = rows[-1]
    print(f"snapshot publish at {mb:.1f} MB: {median:.2f} ms, {median / mb:.3f} ms/MB")


if __name__ == "__main__":
    main()
