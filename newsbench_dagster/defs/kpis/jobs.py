"""The KPI job: roll a day's scores of all sites into KPIs (the demo and backfills run it after
the site-day runs; with the daemon, `kpi_daily` also follows by its automation condition)."""

from dagster import AssetSelection, define_asset_job

kpi_job = define_asset_job(
    "kpi_job",
    selection=AssetSelection.assets("kpi_daily"),
    description="Roll the day's scores of all sites into KPIs.",
)
