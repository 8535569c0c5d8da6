"""Data-quality gates: the suites of `core.analytics.data_quality` (Great Expectations
expectation types, evaluated in pandas) on each partition of `run_scores` and `kpi_daily`.
Blocking: a failing partition stops what reads it in the run."""

import pandas as pd
from dagster import AssetCheckResult, AssetCheckSeverity, MetadataValue

from newsbench_dagster.core.analytics.data_quality import failures_markdown, summary, validate
from newsbench_dagster.defs.partitions import day_check, site_day_check


def _result(table: str, df: pd.DataFrame) -> AssetCheckResult:
    outcome = validate(table, df)
    failed = outcome["failed"]
    return AssetCheckResult(
        passed=outcome["success"],
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "rows": len(df),
            "evaluated": outcome["evaluated"],
            "failed": len(failed),
            "failures": MetadataValue.json(failed),
            "failures_table": MetadataValue.md(failures_markdown(failed) if failed else "none"),
        },
        description=summary(outcome, len(df)),
    )


@site_day_check(
    asset="run_scores",
    blocking=True,
    description="run_scores satisfies its data-quality suite (core.analytics.data_quality): keys "
    "set, run ids unique, scores in [0, 1], every run classed, exclusions explained.",
)
def run_scores_quality(run_scores: pd.DataFrame) -> AssetCheckResult:
    return _result("run_scores", run_scores)


@day_check(
    asset="kpi_daily",
    blocking=True,
    description="kpi_daily satisfies its data-quality suite (core.analytics.data_quality): one "
    "row per key, rates in [0, 1], the interval around the rate, counts nested.",
)
def kpi_daily_quality(kpi_daily: pd.DataFrame) -> AssetCheckResult:
    return _result("kpi_daily", kpi_daily)
