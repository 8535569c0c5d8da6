"""The artifact store: a local folder by default; object storage by giving `root` a URL
(`gs://bucket/newsbench` with gcsfs installed, `s3://...` with s3fs): config, not code."""

from dagster import ConfigurableResource
from pydantic import Field

from newsbench_dagster.core.artifacts import ArtifactStore, artifact_store
from newsbench_dagster.paths import ARTIFACTS_DIR


class ArtifactStoreResource(ConfigurableResource):
    root: str = Field(
        default=str(ARTIFACTS_DIR),
        description="A folder, or an fsspec URL such as gs://bucket/prefix or s3://bucket/prefix",
    )

    def store(self) -> ArtifactStore:
        return artifact_store(self.root)
