"""Jobs and schedules: the nightly full sweep, the hourly canary, and candidate evaluation
(requested by the agent registry sensor)."""

from dagster import (
    AssetSelection,
    DefaultScheduleStatus,
    MultiPartitionKey,
    RunRequest,
    ScheduleEvaluationContext,
    define_asset_job,
    schedule,
)

from newsbench_dagster.partitions import SITE_KEYS, agent_version_partitions, site_day_partitions

site_day_job = define_asset_job(
    "site_day_job",
    selection=AssetSelection.assets(
        "feed_items", "news_tasks", "agent_runs", "run_scores", "site_drift"
    ),
    partitions_def=site_day_partitions,
    description="Poll, generate tasks, run the agents, score and check for drift, for one "
    "site and day.",
)

kpi_job = define_asset_job(
    "kpi_job",
    selection=AssetSelection.assets("kpi_daily"),
    description="Roll the day's scores of all sites into KPIs.",
)

candidate_job = define_asset_job(
    "candidate_job",
    selection=AssetSelection.assets("candidate_runs", "candidate_scores", "release_decision"),
    partitions_def=agent_version_partitions,
    description="Evaluate one agent version against the baseline and gate it.",
)

CANARY_SITES_PER_HOUR = 2


def canary_sites(hour: int, sites: list[str] = SITE_KEYS, k: int = CANARY_SITES_PER_HOUR):
    """The hour's rotating subset: k sites, every site visited once per len(sites)/k hours."""
    n = len(sites)
    return [sites[(hour * k + i) % n] for i in range(min(k, n))]


@schedule(
    cron_schedule="0 22 * * *",
    job=site_day_job,
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.STOPPED,
)
def nightly_sweep(context: ScheduleEvaluationContext):
    """Every night, evaluate each allowlisted site for the current day."""
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    for site in SITE_KEYS:
        yield RunRequest(
            run_key=f"{site}|{day}",
            partition_key=MultiPartitionKey({"site": site, "day": day}),
            tags={"newsbench/trigger": "nightly"},
        )


@schedule(
    cron_schedule="30 * * * *",
    job=site_day_job,
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.STOPPED,
)
def hourly_canary(context: ScheduleEvaluationContext):
    """Every hour, a rotating pair of sites for the current day: drift and breakage show up
    within hours, not at the next nightly sweep."""
    at = context.scheduled_execution_time
    day = at.strftime("%Y-%m-%d")
    hour = int(at.timestamp() // 3600)
    for site in canary_sites(hour):
        yield RunRequest(
            run_key=f"canary|{site}|{at:%Y-%m-%dT%H}",
            partition_key=MultiPartitionKey({"site": site, "day": day}),
            tags={"newsbench/trigger": "canary"},
        )


SCHEDULES = [nightly_sweep, hourly_canary]
JOBS = [site_day_job, kpi_job, candidate_job]
