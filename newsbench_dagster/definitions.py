"""The one Definitions object; `workspace.yaml` points here.

Definitions are loaded from the stage folders of `defs/`, each folder's assets forming the
asset group of its name; the resources are chosen per deployment from one table."""

from dagster import (
    Definitions,
    EnvVar,
    in_process_executor,
    load_assets_from_package_module,
    load_definitions_from_package_module,
)

from newsbench_dagster.defs import drift, evaluation, ingest, kpis, quality, release, reports
from newsbench_dagster.resources import (
    AgentRegistryResource,
    ArtifactStoreResource,
    BrowserResource,
    NewsroomResource,
    ReleaseResource,
    SiteRegistryResource,
    TaskSetResource,
    duckdb_warehouse,
)

STAGES = (ingest, evaluation, drift, kpis, reports, quality, release)


def _group(stage) -> str:
    return stage.__name__.rsplit(".", 1)[-1]


ASSETS = [a for s in STAGES for a in load_assets_from_package_module(s, group_name=_group(s))]
_FOUND = [load_definitions_from_package_module(s) for s in STAGES]  # checks, jobs, schedules...
CHECKS = [c for d in _FOUND for c in d.asset_checks or []]
JOBS = [j for d in _FOUND for j in d.jobs or []]
SCHEDULES = [x for d in _FOUND for x in d.schedules or []]
SENSORS = [x for d in _FOUND for x in d.sensors or []]

# Resources per deployment. `local`: the embedded world (the newsroom, system Chromium, a
# DuckDB file, a local artifact folder). `production`: real sites from sites.yaml (newsroom
# off), BigQuery, with project and key read from the environment at run time. Built when a
# deployment is chosen: BigQuery's libraries take seconds to import, which `local` never pays.
RESOURCES_LOCAL = {
    "io_manager": duckdb_warehouse(),
    "newsroom": NewsroomResource(),
    "browser": BrowserResource(),
    "artifacts": ArtifactStoreResource(),
    "sites": SiteRegistryResource(),
    "agents": AgentRegistryResource(),
    "tasks": TaskSetResource(),
    "release": ReleaseResource(),
}


def _production_resources() -> dict:
    from newsbench_dagster.resources.bigquery import bigquery_warehouse

    return {
        **RESOURCES_LOCAL,
        "newsroom": NewsroomResource(enabled=False),
        "io_manager": bigquery_warehouse(
            project=EnvVar("NEWSBENCH_BQ_PROJECT"),
            gcp_credentials=EnvVar("NEWSBENCH_GCP_CREDENTIALS"),
        ),
    }


RESOURCES = {"local": lambda: RESOURCES_LOCAL, "production": _production_resources}


def build_definitions(resources: dict, executor=in_process_executor) -> Definitions:
    return Definitions(
        assets=ASSETS,
        asset_checks=CHECKS,
        jobs=JOBS,
        schedules=SCHEDULES,
        sensors=SENSORS,
        resources=resources,
        # Locally DuckDB has one writer and the newsroom lives in the run's process: steps run
        # in-process (partitions run at once as separate runs: see cli/fanout.py).
        executor=executor,
    )


defs = build_definitions(RESOURCES["local"]())


def production() -> Definitions:
    """The deployed variant: real sites (no newsroom), BigQuery. Point a workspace at
    `newsbench_dagster.definitions:production`; secrets come from the environment at run time."""
    return build_definitions(RESOURCES["production"]())


# The celery app's settings for Newsbench's steps (README "Several machines").
CELERY_SETTINGS = {
    # One step at a time per worker process: a step holds a browser.
    "worker_prefetch_multiplier": 1,
    # A step is acknowledged when it ends: a lost worker's step goes to another once the
    # visibility timeout (longer than any step) passes; kombu sweeps for such steps every 10 s.
    "task_acks_late": True,
    "task_reject_on_worker_lost": True,
    "broker_transport_options": {
        "visibility_timeout": 7200,
        "unacked_restore_interval": 10,
        "unacked_restore_throttle": 1,
    },
}


def celery() -> Definitions:
    """Several machines: the production variant with every step sent through Dagster's celery
    executor to the workers listening on the broker (`NEWSBENCH_CELERY_BROKER`; results in
    `NEWSBENCH_CELERY_BACKEND`, which may be the same Redis), both read when a run starts. Point
    a workspace at `newsbench_dagster.definitions:celery`; README "Scaling out"."""
    from dagster_celery import celery_executor

    executor = celery_executor.configured(
        {
            "broker": {"env": "NEWSBENCH_CELERY_BROKER"},
            "backend": {"env": "NEWSBENCH_CELERY_BACKEND"},
            "config_source": CELERY_SETTINGS,
        }
    )
    return build_definitions(RESOURCES["production"](), executor=executor)
