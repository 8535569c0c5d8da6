"""Data quality: the Great Expectations suites of `core.analytics.data_quality` as blocking
checks on `run_scores` and `kpi_daily`."""
