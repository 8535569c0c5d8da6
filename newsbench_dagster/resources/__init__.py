"""Resources. The local default is the embedded world: the newsroom, system Chromium, a DuckDB
file and a local artifact folder; `definitions.production()` swaps the deployment-specific
ones (newsroom off, BigQuery) in one place."""

from newsbench_dagster.resources.artifacts import ArtifactStoreResource
from newsbench_dagster.resources.browser import BrowserResource
from newsbench_dagster.resources.newsroom import NewsroomResource
from newsbench_dagster.resources.registry import AgentRegistryResource, SiteRegistryResource
from newsbench_dagster.resources.release import ReleaseResource
from newsbench_dagster.resources.warehouse import (
    DuckDBWarehouse,
    bigquery_warehouse,
    duckdb_warehouse,
)

RESOURCES_LOCAL = {
    "io_manager": duckdb_warehouse(),
    "newsroom": NewsroomResource(),
    "browser": BrowserResource(),
    "artifacts": ArtifactStoreResource(),
    "sites": SiteRegistryResource(),
    "agents": AgentRegistryResource(),
    "release": ReleaseResource(),
}

__all__ = [
    "RESOURCES_LOCAL",
    "ArtifactStoreResource",
    "BrowserResource",
    "NewsroomResource",
    "AgentRegistryResource",
    "SiteRegistryResource",
    "ReleaseResource",
    "DuckDBWarehouse",
    "bigquery_warehouse",
    "duckdb_warehouse",
]
