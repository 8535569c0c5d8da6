"""KPIs: the daily rollup across all sites."""
