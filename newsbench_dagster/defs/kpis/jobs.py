"""The KPI job: roll a day's scores of all sites into KPIs and write the day's report (the demo
and backfills run it after the site-day runs; with the daemon, both also follow by their
automation condition: defs/kpis/sensors.py)."""

from dagster import AssetSelection, define_asset_job

kpi_job = define_asset_job(
    "kpi_job",
    selection=AssetSelection.assets("kpi_daily", "daily_report"),
    description="Roll the day's scores of all sites into KPIs, then write the day's report.",
)
