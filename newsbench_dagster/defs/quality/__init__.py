"""Data quality: the suites of `core.analytics.data_quality` (Great Expectations expectation
types, evaluated in pandas) as blocking checks on `run_scores` and `kpi_daily`."""
