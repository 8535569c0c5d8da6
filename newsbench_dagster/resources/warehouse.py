"""The warehouse: DuckDB by default, BigQuery in production; `definitions.py` picks one.

Table and column names are the same in both (`core.tables`). On DuckDB, tables are created
from the declared schema (JSON and TIMESTAMP columns, fixed order) before the first write, so
an empty partition still leaves a well-typed table for downstream assets.
"""

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from dagster import InputContext, OutputContext
from dagster._core.storage.db_io_manager import DbTypeHandler, TableSlice
from dagster_duckdb_pandas import DuckDBPandasIOManager, DuckDBPandasTypeHandler
from dagster_gcp_pandas import BigQueryPandasIOManager

from newsbench_dagster.core import tables
from newsbench_dagster.paths import WAREHOUSE_FILE


class DeclaredSchemaTypeHandler(DuckDBPandasTypeHandler):
    """Writes DataFrames into tables created from `core.tables`, matching columns by name."""

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


class DuckDBWarehouse(DuckDBPandasIOManager):
    """The local warehouse: a DuckDB file with the declared table schemas."""

    @staticmethod
    def type_handlers() -> Sequence[DbTypeHandler]:
        return [DeclaredSchemaTypeHandler()]

    @staticmethod
    def default_load_type() -> type | None:
        return pd.DataFrame

    def create_io_manager(self, context):
        Path(self.database).parent.mkdir(parents=True, exist_ok=True)  # at run time, not import
        return super().create_io_manager(context)


DATASET = "newsbench"  # DuckDB schema / BigQuery dataset: the same table names in both


def duckdb_warehouse(path: str | None = None) -> DuckDBWarehouse:
    return DuckDBWarehouse(database=str(path or WAREHOUSE_FILE), schema=DATASET)


def bigquery_warehouse(
    project: str, gcp_credentials: str | None = None, location: str | None = None
) -> BigQueryPandasIOManager:
    """Production: pass `EnvVar`s, so the project and the key are read at run time and the
    key never shows in the UI or a log."""
    return BigQueryPandasIOManager(
        project=project, dataset=DATASET, location=location, gcp_credentials=gcp_credentials
    )
