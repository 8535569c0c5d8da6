"""The production warehouse: BigQuery, with the tables declared in `core.analytics.tables`
(the same names and columns as the local DuckDB warehouse, `resources.warehouse`). Imported only
where BigQuery is used (`definitions.production`): its client libraries take seconds to import."""

import json
from collections.abc import Sequence

import pandas as pd
from dagster import InputContext, OutputContext
from dagster._core.storage.db_io_manager import DbIOManager, DbTypeHandler, TableSlice
from dagster_gcp.bigquery.io_manager import BigQueryClient
from dagster_gcp_pandas import BigQueryPandasIOManager, BigQueryPandasTypeHandler

from newsbench_dagster.core.analytics import tables
from newsbench_dagster.core.analytics.analyst_sql import (
    bigquery_columns,
    bigquery_ddl,
    bigquery_evolve,
    partition_column,
)
from newsbench_dagster.resources.warehouse import DATASET, SwappingDbIOManager


def load_job_config(table: str, columns: Sequence[str]):
    """The load job for a DataFrame with `columns` into the declared `table`: an explicit
    schema from `core.analytics.tables`, so TIMESTAMP stays TIMESTAMP (a naive pandas datetime
    would be inferred as DATETIME) and JSON stays JSON (our frames hold JSON as text, inferred as
    STRING; all-NULL columns cannot be inferred at all). CSV, not the default Parquet: BigQuery
    loads JSON columns only from CSV, Avro or JSON files. An empty field is NULL (an empty
    string arrives as NULL too); naive timestamps are written as UTC wall time."""
    from google.cloud import bigquery

    declared = dict(bigquery_columns(table))
    unknown = [c for c in columns if c not in declared]
    if unknown:
        raise ValueError(f"columns not declared for {table} in core.analytics.tables: {unknown}")
    return bigquery.LoadJobConfig(
        schema=[bigquery.SchemaField(c, declared[c], mode="NULLABLE") for c in columns],
        source_format=bigquery.SourceFormat.CSV,
        skip_leading_rows=0,
        allow_quoted_newlines=True,
        write_disposition=bigquery.WriteDisposition.WRITE_APPEND,
    )


def _json_text(value):
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def normalize_loaded(table: str, df: pd.DataFrame) -> pd.DataFrame:
    """A frame read from BigQuery in the shape DuckDB gives (and `core.analytics.tables.frame`
    builds): lower-case names, naive UTC timestamps, JSON as text, the declared dtypes."""
    df = df.rename(columns=str.lower)
    for col, kind in tables.TABLES[table].items():
        if col not in df.columns:
            continue
        if kind == "timestamp":
            values = pd.to_datetime(df[col], utc=True).dt.tz_localize(None)
            df[col] = values.astype(tables.TYPES[kind][1])
        elif kind == "json":
            df[col] = df[col].map(_json_text).astype("object")
        else:
            df[col] = df[col].astype(tables.TYPES[kind][1])
    return df


class DeclaredSchemaBigQueryTypeHandler(BigQueryPandasTypeHandler):
    """Writes DataFrames into BigQuery tables created from `core.analytics.tables` (`bigquery_ddl`:
    partitioned by DATE(day), clustered), once per table per run, before the first write.

    `connection` is the `google.cloud.bigquery.Client` that `dagster_gcp`'s BigQueryClient
    opens for each output and input. Tables not declared in `core.analytics.tables` keep the stock
    behaviour."""

    def __init__(self) -> None:
        self._ready: set[tuple[str, str, str]] = set()

    @staticmethod
    def _job_kwargs(context) -> dict:
        config = context.resource_config or {}
        return {"location": config.get("location"), "timeout": config.get("timeout")}

    def ensure_table(self, context, table_slice: TableSlice, connection) -> None:
        """CREATE TABLE IF NOT EXISTS (partitioned, clustered), then add declared columns an
        older table lacks; warn when an existing table is not day-partitioned (BigQuery cannot
        partition a table in place: it has to be recreated, see core/analytics/sql/README.md)."""
        project, dataset, table = table_slice.database, table_slice.schema, table_slice.table
        if (project, dataset, table) in self._ready:
            return
        kwargs = {"project": project, **self._job_kwargs(context)}
        connection.query(bigquery_ddl(table, dataset, project), **kwargs).result()
        existing = connection.get_table(f"{project}.{dataset}.{table}")
        have = {f.name.lower() for f in existing.schema}
        missing = [c for c, _ in bigquery_columns(table) if c not in have]
        if missing:
            statement = bigquery_evolve(table, dataset, project, columns=missing)
            connection.query(statement, **kwargs).result()
        day = partition_column(table)
        partitioning = getattr(existing, "time_partitioning", None)
        if day and getattr(partitioning, "field", None) != day:
            context.log.warning(
                f"{project}.{dataset}.{table} exists but is not partitioned by DATE({day}); "
                "writes work but scan the whole table: recreate it "
                "(newsbench_dagster/core/analytics/sql/README.md)"
            )
        self._ready.add((project, dataset, table))

    def handle_output(
        self, context: OutputContext, table_slice: TableSlice, obj: pd.DataFrame, connection
    ):
        if table_slice.table not in tables.TABLES:
            return super().handle_output(context, table_slice, obj, connection)
        self.ensure_table(context, table_slice, connection)
        if not obj.empty:
            connection.load_table_from_dataframe(
                dataframe=obj,
                destination=f"{table_slice.schema}.{table_slice.table}",
                project=table_slice.database,
                job_config=load_job_config(table_slice.table, list(obj.columns)),
                **self._job_kwargs(context),
            ).result()
        context.add_output_metadata(
            {
                "dagster/partition_row_count"
                if context.has_partition_key
                else "dagster/row_count": len(obj),
                "dagster/storage_kind": "bigquery",
            }
        )

    def load_input(
        self, context: InputContext, table_slice: TableSlice, connection
    ) -> pd.DataFrame:
        if table_slice.table not in tables.TABLES:
            return super().load_input(context, table_slice, connection)
        # As on DuckDB: an upstream that wrote nothing yet still reads as an empty, typed table.
        connection.query(
            f"CREATE SCHEMA IF NOT EXISTS `{table_slice.database}`.{table_slice.schema}",
            project=table_slice.database,
            **self._job_kwargs(context),
        ).result()
        self.ensure_table(context, table_slice, connection)
        df = super().load_input(context, table_slice, connection)
        if df.empty and not len(df.columns):
            return tables.frame(table_slice.table, [])
        return normalize_loaded(table_slice.table, df)


class BigQueryWarehouse(BigQueryPandasIOManager):
    """Production: BigQuery, with the declared, day-partitioned and clustered tables."""

    @staticmethod
    def type_handlers() -> Sequence[DbTypeHandler]:
        return [DeclaredSchemaBigQueryTypeHandler()]

    @staticmethod
    def default_load_type() -> type | None:
        return pd.DataFrame

    def create_io_manager(self, context) -> DbIOManager:
        # As BigQueryPandasIOManager's, plus the swap of the partition's artifact folders after
        # the write (`warehouse.SwappingDbIOManager`), so object storage keeps one attempt each.
        return SwappingDbIOManager(
            db_client=BigQueryClient(
                write_mode=self.write_mode, gcp_credentials=self.gcp_credentials
            ),
            io_manager_name="BigQueryIOManager",
            database=self.project,
            schema=self.dataset,
            type_handlers=self.type_handlers(),
            default_load_type=self.default_load_type(),
        )


def bigquery_warehouse(
    project: str, gcp_credentials: str | None = None, location: str | None = None
) -> BigQueryWarehouse:
    """Production: pass `EnvVar`s, so the project and the key are read at run time and the
    key never shows in the UI or a log."""
    return BigQueryWarehouse(
        project=project, dataset=DATASET, location=location, gcp_credentials=gcp_credentials
    )
