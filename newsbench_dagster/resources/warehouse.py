"""The warehouse: one IO manager, DuckDB by default, BigQuery in production.

Table and column names are the same in both (`core.tables`). On DuckDB, tables are created
from the declared schema (JSON and TIMESTAMP columns, fixed order) before the first write, so
an empty partition still leaves a well-typed table for downstream assets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import pandas as pd
from dagster import ConfigurableIOManagerFactory, InputContext, OutputContext
from dagster._core.storage.db_io_manager import DbTypeHandler, TableSlice
from dagster_duckdb_pandas import DuckDBPandasIOManager, DuckDBPandasTypeHandler
from pydantic import Field

from newsbench_dagster.core import tables
from newsbench_dagster.paths import DATA_DIR


class DeclaredSchemaTypeHandler(DuckDBPandasTypeHandler):
    """Writes DataFrames into tables created from `core.tables`, matching columns by name."""

    def handle_output(
        self, context: OutputContext, table_slice: TableSlice, obj: pd.DataFrame, connection
    ) -> None:
        name = f"{table_slice.schema}.{table_slice.table}"
        if table_slice.table in tables.TABLES:
            connection.execute(tables.ddl(table_slice.table, table_slice.schema))
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


class NewsbenchDuckDBIOManager(DuckDBPandasIOManager):
    @staticmethod
    def type_handlers() -> Sequence[DbTypeHandler]:
        return [DeclaredSchemaTypeHandler()]


class Warehouse(ConfigurableIOManagerFactory):
    """Chooses the backend by configuration; the assets never know which one they write to."""

    backend: Literal["duckdb", "bigquery"] = "duckdb"
    duckdb_path: str = Field(default=str(DATA_DIR / "newsbench.duckdb"))
    dataset: str = Field(default="newsbench", description="DuckDB schema / BigQuery dataset")
    bigquery_project: str | None = None
    bigquery_location: str | None = None
    # Base64 service-account key; pass an EnvVar, never a literal.
    gcp_credentials: str | None = None

    def create_io_manager(self, context):
        if self.backend == "bigquery":
            from dagster_gcp_pandas import BigQueryPandasIOManager

            if not self.bigquery_project:
                raise ValueError("warehouse backend 'bigquery' needs bigquery_project")
            return BigQueryPandasIOManager(
                project=self.bigquery_project,
                dataset=self.dataset,
                location=self.bigquery_location,
                gcp_credentials=self.gcp_credentials,
            ).create_io_manager(context)
        from pathlib import Path

        Path(self.duckdb_path).parent.mkdir(parents=True, exist_ok=True)
        return NewsbenchDuckDBIOManager(
            database=self.duckdb_path, schema=self.dataset
        ).create_io_manager(context)
