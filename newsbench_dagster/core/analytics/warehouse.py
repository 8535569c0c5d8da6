"""Reading the local warehouse (the DuckDB file the pipeline writes) outside Dagster: the KPI
table of a day, the latest stored release decision, and a stored candidate evaluation. Read
only, and an absent warehouse or table is a clear error, never an empty answer."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path

from newsbench_dagster.core.analytics import snapshot, tables
from newsbench_dagster.core.analytics.warehouse_lock import WarehouseBusy
from newsbench_dagster.core.errors import NewsbenchError

SCHEMA = "newsbench"  # the DuckDB schema / BigQuery dataset of every table


class WarehouseError(NewsbenchError):
    """The warehouse file or one of its tables is not there (yet)."""


@contextmanager
def reading(database: str | Path) -> Iterator:
    """A read-only connection to the warehouse's snapshot (`snapshot`: the copy each committed
    write publishes), so a read never waits for a run's write nor stands in its way; it sees
    every write committed before it opened."""
    import duckdb

    if not Path(database).exists():
        raise WarehouseError(f"{database}: no warehouse yet")
    try:
        path = snapshot.current(database)
    except WarehouseBusy as e:  # no snapshot, and the file held too long to make one
        raise WarehouseError(str(e)) from e
    with duckdb.connect(str(path), read_only=True) as con:
        yield con


def table_rows(database: str | Path, table: str, where: str, params: list) -> list[dict]:
    """Rows of a declared table as `core.analytics.tables.records` gives them (JSON parsed)."""
    with reading(database) as con:
        return query_rows(con, table, where, params, database)


def query_rows(con, table: str, where: str, params: list, database: str | Path = "") -> list[dict]:
    """`table_rows` on a connection `reading` gave (several tables in one turn)."""
    import duckdb

    try:
        df = con.execute(f"SELECT * FROM {SCHEMA}.{table} WHERE {where}", params).df()
    except duckdb.CatalogException as e:
        raise WarehouseError(f"{database}: no table {SCHEMA}.{table}") from e
    return tables.records(df, table)


def kpi_overall(database: str | Path, day: date) -> list[dict]:
    """The day's `all` slice of `kpi_daily`, per site (then `*`) and agent version."""
    rows = table_rows(
        database,
        "kpi_daily",
        "day = ? AND slice_kind = 'all'",
        [datetime(day.year, day.month, day.day)],
    )
    return sorted(rows, key=lambda r: (r["site"] == "*", r["site"], r["agent_version"]))


def latest_decision(database: str | Path, candidate_version: str) -> dict | None:
    """The newest `release_decision` row stored for a candidate, or None."""
    rows = table_rows(database, "release_decision", "candidate_version = ?", [candidate_version])
    return max(rows, key=lambda r: str(r["decided_at"])) if rows else None


def stored_evaluation(database: str | Path, candidate_version: str) -> tuple[list, list]:
    """(candidate_runs rows, candidate_scores rows) stored for a candidate."""
    where, params = "candidate_version = ?", [candidate_version]
    return (
        table_rows(database, "candidate_runs", where, params),
        table_rows(database, "candidate_scores", where, params),
    )


def site_drift_rows(database: str | Path) -> list[dict]:
    """Every `site_drift` row (none when the drift table was never written)."""
    try:
        return table_rows(database, "site_drift", "TRUE", [])
    except WarehouseError:
        return []
