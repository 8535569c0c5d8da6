"""Resources: ConfigurableResources only, one module each (the newsroom, the browser, the
warehouse, the artifact store, the registries, the task set, the release policy). Which ones a
deployment uses is chosen in one table, `definitions.RESOURCES`."""

from newsbench_dagster.resources.artifacts import ArtifactStoreResource
from newsbench_dagster.resources.browser import BrowserResource
from newsbench_dagster.resources.newsroom import NewsroomResource
from newsbench_dagster.resources.registry import AgentRegistryResource, SiteRegistryResource
from newsbench_dagster.resources.release import ReleaseResource
from newsbench_dagster.resources.tasks import TaskSetResource
from newsbench_dagster.resources.warehouse import DuckDBWarehouse, duckdb_warehouse

__all__ = [
    "ArtifactStoreResource",
    "BrowserResource",
    "NewsroomResource",
    "AgentRegistryResource",
    "SiteRegistryResource",
    "ReleaseResource",
    "TaskSetResource",
    "DuckDBWarehouse",
    "duckdb_warehouse",
]
