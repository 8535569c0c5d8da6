"""The local deployment's resources (`definitions.RESOURCES_LOCAL`) pointed at a test's own
warehouse file, artifact folder and newsroom; `overrides` replace any of them by key."""

from __future__ import annotations

from pathlib import Path

from newsbench_dagster.definitions import RESOURCES_LOCAL
from newsbench_dagster.resources import ArtifactStoreResource, NewsroomResource, duckdb_warehouse


def local_resources(
    db: str | Path, artifacts: str | Path, *, port: int, seed: int, **overrides
) -> dict:
    return {
        **RESOURCES_LOCAL,
        "io_manager": duckdb_warehouse(str(db)),
        # The resource finds a newsroom already serving on its port and reuses it.
        "newsroom": NewsroomResource(port=port, seed=seed),
        "artifacts": ArtifactStoreResource(root=str(artifacts)),
        **overrides,
    }
