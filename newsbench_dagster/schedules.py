"""The nightly sweep: one run per site for the current day."""

from dagster import (
    AssetSelection,
    MultiPartitionKey,
    RunRequest,
    ScheduleEvaluationContext,
    define_asset_job,
    schedule,
)

from newsbench_dagster.partitions import SITE_KEYS, site_day_partitions

site_day_job = define_asset_job(
    "site_day_job",
    selection=AssetSelection.assets("feed_items", "news_tasks", "agent_runs", "run_scores"),
    partitions_def=site_day_partitions,
    description="Poll, generate tasks, run the agents and score, for one site and day.",
)

kpi_job = define_asset_job(
    "kpi_job",
    selection=AssetSelection.assets("kpi_daily"),
    description="Roll the day's scores of all sites into KPIs.",
)


@schedule(cron_schedule="0 22 * * *", job=site_day_job, execution_timezone="UTC")
def nightly_sweep(context: ScheduleEvaluationContext):
    """Every night, evaluate each allowlisted site for the current day."""
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    for site in SITE_KEYS:
        yield RunRequest(
            run_key=f"{site}|{day}",
            partition_key=MultiPartitionKey({"site": site, "day": day}),
            tags={"newsbench/trigger": "nightly"},
        )


SCHEDULES = [nightly_sweep]
JOBS = [site_day_job, kpi_job]
