"""The local warehouse: DuckDB (BigQuery, for production, is `resources.bigquery`, imported only
by the deployment that uses it: its client libraries take seconds to import).

Table and column names are the same in both (`core.analytics.tables`). On DuckDB, tables are created
from the declared schema (JSON and TIMESTAMP columns, fixed order) before the first write, so
an empty partition still leaves a well-typed table for downstream assets. On BigQuery the same
happens with `core.analytics.analyst_sql.bigquery_ddl`: tables with a `day` column are
partitioned by day and clustered by candidate_version / site / agent_version, so the IO manager's
per-partition DELETE and the analysts' queries prune to the days and keys they name instead of
scanning the whole table.
"""

from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
from dagster import InputContext, OutputContext
from dagster._core.storage.db_io_manager import (
    DbIOManager,
    DbTypeHandler,
    TablePartitionDimension,
    TableSlice,
)
from dagster_duckdb.io_manager import DuckDbClient
from dagster_duckdb_pandas import DuckDBPandasIOManager, DuckDBPandasTypeHandler
from pydantic import Field

from newsbench_dagster.core.analytics import snapshot, tables
from newsbench_dagster.core.analytics.kpis import ALL
from newsbench_dagster.core.analytics.warehouse import SCHEMA
from newsbench_dagster.core.analytics.warehouse_lock import warehouse_turn
from newsbench_dagster.core.artifacts import artifact_store
from newsbench_dagster.core.crash_points import WAREHOUSE_WRITE, crash_point
from newsbench_dagster.core.partition_artifacts import ARTIFACT_ATTEMPT, sweep
from newsbench_dagster.paths import WAREHOUSE_FILE
from newsbench_dagster.run_health import attempt_running


class DeclaredSchemaTypeHandler(DuckDBPandasTypeHandler):
    """Writes DataFrames into tables created from `core.analytics.tables`, matching columns by
    name."""

    def handle_output(
        self, context: OutputContext, table_slice: TableSlice, obj: pd.DataFrame, connection
    ) -> None:
        name = f"{table_slice.schema}.{table_slice.table}"
        if table_slice.table in tables.TABLES:
            connection.execute(tables.ddl(table_slice.table, table_slice.schema))
            for statement in tables.evolve(table_slice.table, table_slice.schema):
                connection.execute(statement)
            if not obj.empty:
                connection.execute(f"INSERT INTO {name} BY NAME SELECT * FROM obj")
            crash_point(WAREHOUSE_WRITE, table_slice.table)  # tests only: mid-transaction
            context.add_output_metadata(
                {
                    "dagster/partition_row_count"
                    if context.has_partition_key
                    else "dagster/row_count": len(obj)
                }
            )
        else:
            super().handle_output(context, table_slice, obj, connection)

    def load_input(
        self, context: InputContext, table_slice: TableSlice, connection
    ) -> pd.DataFrame:
        if table_slice.table in tables.TABLES:
            connection.execute(f"CREATE SCHEMA IF NOT EXISTS {table_slice.schema}")
            connection.execute(tables.ddl(table_slice.table, table_slice.schema))
        return super().load_input(context, table_slice, connection)


class TakingTurnsDuckDbClient(DuckDbClient):
    """DuckDB connections that wait for the warehouse's lock (`core.analytics.warehouse_lock`)
    so parallel runs share the one file, and replace a partition in one transaction: a run
    killed mid-write leaves the partition's previous rows, never half of them. The same
    transaction deletes the partition's rows downstream (`invalidate_downstream`)."""

    @staticmethod
    def delete_table_slice(context: OutputContext, table_slice: TableSlice, connection) -> None:
        # Asked first, not caught: inside the transaction a failed DELETE would abort it.
        if _has_table(connection, table_slice.schema, table_slice.table):
            DuckDbClient.delete_table_slice(context, table_slice, connection)
        invalidate_downstream(table_slice, connection)

    @staticmethod
    @contextmanager
    def connect(context, table_slice):
        database = context.resource_config["database"]
        wrote = isinstance(context, OutputContext)  # readers open the snapshot this publishes
        with (
            warehouse_turn(database) as waited,
            snapshot.writing(database, wrote=wrote, say=lambda m: context.log.warning(m)),
            DuckDbClient.connect(context, table_slice) as con,
        ):
            if waited > 1.0:
                context.log.info(f"waited {waited:.1f}s for the warehouse ({database})")
            con.begin()
            try:
                yield con
            except BaseException:
                con.rollback()
                raise
            con.commit()


def _has_table(connection, schema: str, table: str) -> bool:
    return bool(
        connection.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
            [schema, table],
        ).fetchone()
    )


def invalidate_downstream(table_slice: TableSlice, connection) -> None:
    """The same site-day partition of every table below this one (`tables.DOWNSTREAM`), and
    the day's KPI rows of the site and of all sites, deleted in the caller's transaction."""
    downstream = tables.DOWNSTREAM.get(table_slice.table, ())
    dims = {d.partition_expr: d for d in table_slice.partition_dimensions or ()}
    if not downstream or set(dims) != {"site", "day"}:
        return
    for table in downstream:
        if _has_table(connection, table_slice.schema, table):
            DuckDbClient.delete_table_slice(None, table_slice._replace(table=table), connection)
    if _has_table(connection, table_slice.schema, tables.DAY_ROLLUP):
        sites = TablePartitionDimension("site", [*dims["site"].partitions, ALL])
        rollup = table_slice._replace(
            table=tables.DAY_ROLLUP, partition_dimensions=[sites, dims["day"]]
        )
        DuckDbClient.delete_table_slice(None, rollup, connection)


class SwappingDbIOManager(DbIOManager):
    """Replaces a partition's rows in one transaction, then removes the partition's artifact
    folders of other attempts (`core.partition_artifacts`) when the asset wrote its artifacts
    by attempt: it says so in its output metadata (`ARTIFACT_ATTEMPT`)."""

    def handle_output(self, context: OutputContext, obj: object) -> None:
        super().handle_output(context, obj)  # committed
        attempt = context.output_metadata.get(ARTIFACT_ATTEMPT)
        if attempt is None:
            return
        spec = attempt.data if hasattr(attempt, "data") else attempt
        try:
            instance = context.step_context.instance
            removed = sweep(
                artifact_store(spec["store"]),
                spec["folder"],
                keep=spec["attempt"],
                running=lambda run_id: attempt_running(instance, run_id),
            )
        except Exception as e:  # noqa: BLE001 - the rows are committed: left for the next write
            context.log.warning(f"could not remove earlier attempts' artifacts: {e}")
            return
        if removed:
            context.log.info(
                f"removed the artifacts of {len(removed)} earlier attempt(s) at this partition "
                f"({spec['folder']}): {', '.join(removed)}"
            )


class DuckDBWarehouse(DuckDBPandasIOManager):
    """The local warehouse: a DuckDB file with the declared table schemas, shared by parallel
    runs by taking turns (`TakingTurnsDuckDbClient`). The file and schema are defaults, not
    constructor values, so run config can point a run elsewhere (`newsbench demo` workers,
    tests): Dagster keeps a value given to the constructor over run config."""

    database: str = Field(default=str(WAREHOUSE_FILE), description="Path to the DuckDB file.")
    schema_: str | None = Field(default=SCHEMA, alias="schema", description="Schema of the tables.")

    @staticmethod
    def type_handlers() -> Sequence[DbTypeHandler]:
        return [DeclaredSchemaTypeHandler()]

    @staticmethod
    def default_load_type() -> type | None:
        return pd.DataFrame

    def create_io_manager(self, context) -> DbIOManager:
        Path(self.database).parent.mkdir(parents=True, exist_ok=True)  # at run time, not import
        return SwappingDbIOManager(
            db_client=TakingTurnsDuckDbClient(),
            database=self.database,
            schema=self.schema_,
            type_handlers=self.type_handlers(),
            default_load_type=self.default_load_type(),
            io_manager_name="DuckDBIOManager",
        )


# DuckDB schema / BigQuery dataset: the same table names in both.
DATASET = SCHEMA


def duckdb_warehouse(path: str | None = None) -> DuckDBWarehouse:
    return DuckDBWarehouse(database=str(path)) if path else DuckDBWarehouse()
