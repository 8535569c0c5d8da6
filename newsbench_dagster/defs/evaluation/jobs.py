"""The site-day job and its schedules: the nightly full sweep and the hourly canary."""

from dagster import (
    AssetSelection,
    DefaultScheduleStatus,
    MultiPartitionKey,
    RunRequest,
    ScheduleEvaluationContext,
    define_asset_job,
    schedule,
)

from newsbench_dagster.defs.partitions import SITE_KEYS, site_day_partitions

site_day_job = define_asset_job(
    "site_day_job",
    selection=AssetSelection.assets(
        "feed_items", "news_tasks", "agent_runs", "run_scores", "site_drift"
    ),
    partitions_def=site_day_partitions,
    description="Poll, generate tasks, run the agents, score and check for drift, for one "
    "site and day.",
)

CANARY_SITES_PER_HOUR = 2


def canary_sites(hour: int, sites: list[str] = SITE_KEYS, k: int = CANARY_SITES_PER_HOUR):
    """The hour's rotating subset: k sites, every site visited once per len(sites)/k hours."""
    n = len(sites)
    return [sites[(hour * k + i) % n] for i in range(min(k, n))]


def _site_day_runs(sites: list[str], day: str, key: str, trigger: str) -> list[RunRequest]:
    """One site_day_job run per site for `day`; `key` makes the run key unique per tick."""
    return [
        RunRequest(
            run_key=key.format(site=site),
            partition_key=MultiPartitionKey({"site": site, "day": day}),
            tags={"newsbench/trigger": trigger},
        )
        for site in sites
    ]


# Both schedules run the site-day job on UTC days, off until a deployment switches them on.
_SITE_DAY_SCHEDULE = {
    "job": site_day_job,
    "execution_timezone": "UTC",
    "default_status": DefaultScheduleStatus.STOPPED,
}


@schedule(cron_schedule="0 22 * * *", **_SITE_DAY_SCHEDULE)
def nightly_sweep(context: ScheduleEvaluationContext):
    """Every night, evaluate each allowlisted site for the current day."""
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    return _site_day_runs(SITE_KEYS, day, f"{{site}}|{day}", "nightly")


@schedule(cron_schedule="30 * * * *", **_SITE_DAY_SCHEDULE)
def hourly_canary(context: ScheduleEvaluationContext):
    """Every hour, a rotating pair of sites for the current day: drift and breakage show up
    within hours, not at the next nightly sweep."""
    at = context.scheduled_execution_time
    hour = int(at.timestamp() // 3600)
    key = f"canary|{{site}}|{at:%Y-%m-%dT%H}"
    return _site_day_runs(canary_sites(hour), at.strftime("%Y-%m-%d"), key, "canary")
