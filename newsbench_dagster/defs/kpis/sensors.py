"""The automation sensor of the KPI stage, on by default: a day's `kpi_daily` and
`daily_report` follow its scores however they were written (a backfill launched from the UI
included), whenever the daemon runs (`dagster dev`, `newsbench demo`)."""

from dagster import AssetSelection, AutomationConditionSensorDefinition, DefaultSensorStatus

kpi_automation = AutomationConditionSensorDefinition(
    "kpis_follow_scores",
    target=AssetSelection.assets("kpi_daily", "daily_report"),
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=15,
    description="Roll up (and report) a day whenever any site's scores of it change.",
)
