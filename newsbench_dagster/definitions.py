"""The one Definitions object; `workspace.yaml` points here."""

from dagster import Definitions, EnvVar, in_process_executor, load_assets_from_modules

from newsbench_dagster.assets import drift, feeds, kpis, release, runs, scores, tasks
from newsbench_dagster.checks.compliance import compliance
from newsbench_dagster.checks.data_quality import DATA_QUALITY_CHECKS
from newsbench_dagster.checks.drift import DRIFT_CHECKS
from newsbench_dagster.checks.release import RELEASE_CHECKS
from newsbench_dagster.resources import (
    RESOURCES_LOCAL,
    NewsroomResource,
    bigquery_warehouse,
)
from newsbench_dagster.schedules import JOBS, SCHEDULES
from newsbench_dagster.sensors import SENSORS

ASSETS = load_assets_from_modules([feeds, tasks, runs, scores, drift, kpis, release])
CHECKS = [compliance, *DATA_QUALITY_CHECKS, *DRIFT_CHECKS, *RELEASE_CHECKS]


def build_definitions(resources: dict) -> Definitions:
    return Definitions(
        assets=ASSETS,
        asset_checks=CHECKS,
        jobs=JOBS,
        schedules=SCHEDULES,
        sensors=SENSORS,
        resources=resources,
        # DuckDB has one writer, and the newsroom lives in the run's process: run in-process.
        executor=in_process_executor,
    )


defs = build_definitions(RESOURCES_LOCAL)


def production() -> Definitions:
    """The deployed variant: real sites (no newsroom), BigQuery. Point a workspace at
    `newsbench_dagster.definitions:production`; secrets come from the environment at run time."""
    return build_definitions(
        {
            **RESOURCES_LOCAL,
            "newsroom": NewsroomResource(enabled=False),
            "io_manager": bigquery_warehouse(
                project=EnvVar("NEWSBENCH_BQ_PROJECT"),
                gcp_credentials=EnvVar("NEWSBENCH_GCP_CREDENTIALS"),
            ),
        }
    )
