"""Reports: the day's HTML report, built after the KPI rollup, linked from the asset page."""
