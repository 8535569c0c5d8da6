"""The artifact store: a local folder by default (object storage would slot in here)."""

from dagster import ConfigurableResource
from pydantic import Field

from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.paths import ARTIFACTS_DIR


class ArtifactStoreResource(ConfigurableResource):
    root: str = Field(default=str(ARTIFACTS_DIR))

    def store(self) -> LocalArtifactStore:
        return LocalArtifactStore(self.root)
