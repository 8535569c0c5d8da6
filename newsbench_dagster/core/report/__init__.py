"""Reports people look at: the charts (Vega-Lite specs rendered offline to SVG / PNG), the
error clusters, and the static HTML report of a day (`newsbench report`, the `daily_report`
asset). Reads rows as `core.analytics.tables.records` gives them; never imports dagster."""
