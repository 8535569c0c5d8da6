"""One candidate evaluation's materialization (the candidate job for one `agent_version`
partition: one look of the sequential gate), through Dagster in this process, recorded in the
instance of DAGSTER_HOME; run as `python -m tests.support.candidate_run '<spec json>'` by tests
that kill it (`core.crash_points`)."""

from __future__ import annotations

import json
import sys

from dagster import DagsterInstance

from newsbench_dagster.definitions import RESOURCES_LOCAL, build_definitions
from newsbench_dagster.defs.partitions import agent_version_partitions
from newsbench_dagster.resources import (
    AgentRegistryResource,
    ArtifactStoreResource,
    BrowserResource,
    NewsroomResource,
    ReleaseResource,
    duckdb_warehouse,
)


def run(spec: dict) -> bool:
    """`spec`: db, artifacts, agents (a manifest folder), port, seed, release (the release
    resource's config) and version (the partition)."""
    defs = build_definitions(
        {
            **RESOURCES_LOCAL,
            "io_manager": duckdb_warehouse(spec["db"]),
            "newsroom": NewsroomResource(port=spec["port"], seed=spec["seed"]),
            "browser": BrowserResource(artifacts=[], screenshot=False),
            "artifacts": ArtifactStoreResource(root=spec["artifacts"]),
            "agents": AgentRegistryResource(directory=spec["agents"]),
            "release": ReleaseResource(**spec["release"]),
        }
    )
    with DagsterInstance.get() as instance:
        name, version = agent_version_partitions.name, spec["version"]
        if not instance.has_dynamic_partition(name, version):
            instance.add_dynamic_partitions(name, [version])
        result = defs.resolve_job_def("candidate_job").execute_in_process(
            partition_key=version, instance=instance, raise_on_error=False
        )
    return result.success


if __name__ == "__main__":
    sys.exit(0 if run(json.loads(sys.argv[1])) else 1)
