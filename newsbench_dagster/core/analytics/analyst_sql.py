"""Analyst SQL: written once in BigQuery Standard SQL (`sql/` at the repository root), parsed as
BigQuery and run for real on the local DuckDB warehouse through sqlglot; and the BigQuery DDL
of the production tables (day-partitioned, clustered), generated from `core.analytics.tables`.

BigQuery query parameters (`@name`) are replaced by literals in the syntax tree, never by
string formatting, so a value cannot change the query's shape.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError

from newsbench_dagster.core.analytics import tables
from newsbench_dagster.core.analytics.stats import MIN_TASKS
from newsbench_dagster.core.analytics.warehouse import reading

# Shipped with the package (an installed newsbench has them too), next to this module.
SQL_DIR = Path(__file__).with_name("sql")

# Parameters an analyst may leave out (`run_view`); `bq query` needs them all spelled out.
DEFAULT_PARAMS: dict[str, Any] = {"min_tasks": MIN_TASKS}

# logical type (core.analytics.tables) -> BigQuery Standard SQL type
BIGQUERY_TYPES = {
    "string": "STRING",
    "int": "INT64",
    "float": "FLOAT64",
    "bool": "BOOL",
    "timestamp": "TIMESTAMP",
    "json": "JSON",
}

# Clustering columns in order of use: the candidate tables are read and replaced per candidate
# version (their Dagster partition), the live tables per site. BigQuery allows up to four.
CLUSTER_CANDIDATES = ("candidate_version", "site", "agent_version")
MAX_CLUSTER_COLUMNS = 4

_NAME = re.compile(r"[a-z][a-z0-9_]*")


class AnalystSQLError(ValueError):
    """An analyst SQL file that does not parse, or a query parameter that cannot be bound."""


# --- the files


def names() -> list[str]:
    """The analyst queries in `sql/`, without their `.sql` suffix."""
    return sorted(p.stem for p in SQL_DIR.glob("*.sql"))


def path(name: str) -> Path:
    stem = name.removesuffix(".sql")
    if not _NAME.fullmatch(stem):
        raise AnalystSQLError(f"not an analyst query name: {name!r}")
    file = SQL_DIR / f"{stem}.sql"
    if not file.is_file():
        raise AnalystSQLError(f"no analyst query {stem!r} in {SQL_DIR} (have: {names()})")
    return file


def load(name: str) -> str:
    """The BigQuery text of `sql/<name>.sql`."""
    return path(name).read_text(encoding="utf-8")


# --- parsing and transpiling


def parse_bigquery(sql: str, name: str = "<sql>") -> exp.Expression:
    """The one statement of `sql`, parsed as BigQuery Standard SQL; an `AnalystSQLError`
    naming `name`, the line and the column when it does not parse."""
    try:
        statements = sqlglot.parse(sql, read="bigquery", error_level=ErrorLevel.RAISE)
    except ParseError as err:
        where = [
            f"{name}:{e.get('line')}:{e.get('col')}: {e.get('description')}"
            f" near {e.get('highlight')!r}"
            for e in err.errors
        ] or [f"{name}: {err}"]
        raise AnalystSQLError("does not parse as BigQuery:\n" + "\n".join(where)) from err
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise AnalystSQLError(f"{name}: expected one statement, found {len(statements)}")
    return statements[0]


def parameters(sql: str | exp.Expression, name: str = "<sql>") -> set[str]:
    """The `@name` query parameters a query uses."""
    tree = parse_bigquery(sql, name) if isinstance(sql, str) else sql
    return {p.name for p in tree.find_all(exp.Parameter)}


def _literal(key: str, value: Any) -> exp.Expression:
    if value is None:
        return exp.null()
    if isinstance(value, bool):
        return exp.true() if value else exp.false()
    if isinstance(value, int):
        return exp.Literal.number(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise AnalystSQLError(f"query parameter @{key}: not a finite number: {value!r}")
        return exp.cast(exp.Literal.number(repr(value)), exp.DataType.Type.DOUBLE)
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, datetime):
        return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), exp.DataType.Type.TIMESTAMP)
    if isinstance(value, date):
        return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.Type.DATE)
    raise AnalystSQLError(
        f"query parameter @{key}: {type(value).__name__} is not a supported type "
        "(str, int, float, bool, date, datetime, None)"
    )


def bind(tree: exp.Expression, params: dict[str, Any], name: str = "<sql>") -> exp.Expression:
    """A copy of `tree` with every `@name` parameter replaced by its value as a literal."""
    used = {p.name for p in tree.find_all(exp.Parameter)}
    missing = sorted(used - set(params))
    if missing:
        raise AnalystSQLError(
            f"{name}: missing query parameter(s): {', '.join('@' + m for m in missing)}"
        )

    def replace(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Parameter):
            return _literal(node.name, params[node.name])
        return node

    return tree.copy().transform(replace)


def to_duckdb(sql: str, params: dict[str, Any] | None = None, name: str = "<sql>") -> str:
    """The BigQuery query `sql` as DuckDB SQL, with its `@name` parameters bound to `params`."""
    tree = bind(parse_bigquery(sql, name), dict(params or {}), name)
    return tree.sql(dialect="duckdb", pretty=True)


def run_on_duckdb(conn, name: str, params: dict[str, Any] | None = None) -> pd.DataFrame:
    """Run `sql/<name>.sql` on a DuckDB connection whose `newsbench` schema holds the tables."""
    merged = {**DEFAULT_PARAMS, **(params or {})}
    return conn.execute(to_duckdb(load(name), merged, name=f"sql/{path(name).name}")).fetchdf()


def run_view(
    warehouse_path: str | Path, name: str, params: dict[str, Any] | None = None
) -> pd.DataFrame:
    """Run `sql/<name>.sql` on the DuckDB warehouse file, read-only (for the CLI)."""
    with reading(warehouse_path) as conn:
        return run_on_duckdb(conn, name, params)


# --- BigQuery DDL


def bigquery_columns(table: str) -> list[tuple[str, str]]:
    """(column, BigQuery type) of a declared table, in the declared order."""
    return [(c, BIGQUERY_TYPES[k]) for c, k in tables.TABLES[table].items()]


def partition_column(table: str) -> str | None:
    return "day" if tables.TABLES[table].get("day") == "timestamp" else None


def cluster_columns(table: str) -> list[str]:
    columns = tables.TABLES[table]
    return [c for c in CLUSTER_CANDIDATES if c in columns][:MAX_CLUSTER_COLUMNS]


def _qualified(table: str, dataset: str, project: str | None) -> str:
    return f"`{project}.{dataset}.{table}`" if project else f"{dataset}.{table}"


def bigquery_ddl(table: str, dataset: str, project: str | None = None) -> str:
    """CREATE TABLE IF NOT EXISTS for a declared table: day-partitioned on `DATE(day)` when it
    has a `day` column, clustered by candidate_version / site / agent_version when present."""
    cols = ",\n".join(f"  {c} {t}" for c, t in bigquery_columns(table))
    lines = [f"CREATE TABLE IF NOT EXISTS {_qualified(table, dataset, project)} (\n{cols}\n)"]
    if day := partition_column(table):
        lines.append(f"PARTITION BY DATE({day})")
    if cluster := cluster_columns(table):
        lines.append(f"CLUSTER BY {', '.join(cluster)}")
    return "\n".join(lines)


def bigquery_evolve(
    table: str, dataset: str, project: str | None = None, columns: list[str] | None = None
) -> str:
    """One ALTER TABLE adding the declared columns (or those of `columns`) an older table lacks:
    a single metadata update, as BigQuery rate-limits those per table."""
    wanted = [(c, t) for c, t in bigquery_columns(table) if columns is None or c in columns]
    if not wanted:
        raise ValueError(f"no declared columns of {table} to add: {columns}")
    adds = ",\n".join(f"  ADD COLUMN IF NOT EXISTS {c} {t}" for c, t in wanted)
    return f"ALTER TABLE {_qualified(table, dataset, project)}\n{adds}"
