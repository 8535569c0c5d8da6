"""Data-quality gates: the Great Expectations suites of `core.data_quality` on each partition
of `run_scores` and `kpi_daily`. Blocking: a failing partition stops what reads it in the run."""

import pandas as pd
from dagster import AssetCheckResult, AssetCheckSeverity, MetadataValue, asset_check

from newsbench_dagster.assets.kpis import kpi_daily
from newsbench_dagster.assets.scores import run_scores
from newsbench_dagster.core.analytics.data_quality import validate
from newsbench_dagster.partitions import day_partitions, site_day_partitions


def _cell(value: object, width: int = 80) -> str:
    text = "" if value in (None, [], "") else str(value)
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def _markdown(failed: list[dict]) -> str:
    lines = [
        "| expectation | column | unexpected | values | rows |",
        "|---|---|---|---|---|",
    ]
    for f in failed:
        seen = f["observed"]
        if "error" in seen:
            unexpected, values = "error", seen["error"]
        elif "unexpected_count" in seen:
            unexpected = f"{seen['unexpected_count']} ({seen.get('unexpected_percent') or 0:.1f} %)"
            values = seen.get("partial_unexpected_list")
        else:
            unexpected, values = "observed", seen.get("observed_value")
        lines.append(
            f"| {f['expectation']} | {f['column']} | {unexpected} | {_cell(values)} | "
            f"{_cell(seen.get('rows'))} |"
        )
    return "\n".join(lines)


def _result(table: str, df: pd.DataFrame) -> AssetCheckResult:
    outcome = validate(table, df)
    failed = outcome["failed"]
    if outcome["empty"]:
        description = "Empty partition: nothing to check."
    elif failed:
        first = failed[0]
        description = (
            f"{len(failed)} of {outcome['evaluated']} expectations failed; first: "
            f"{first['expectation']} on {first['column']} ({first['why']})"
        )
    else:
        description = f"All {outcome['evaluated']} expectations hold on {len(df)} rows."
    return AssetCheckResult(
        passed=outcome["success"],
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "rows": len(df),
            "evaluated": outcome["evaluated"],
            "failed": len(failed),
            "failures": MetadataValue.json(failed),
            "failures_table": MetadataValue.md(_markdown(failed) if failed else "none"),
        },
        description=description,
    )


@asset_check(
    asset=run_scores,
    blocking=True,
    partitions_def=site_day_partitions,
    description="run_scores satisfies its data-quality suite (core.data_quality): keys set, "
    "run ids unique, scores in [0, 1], every run classed, exclusions explained.",
)
def run_scores_quality(run_scores: pd.DataFrame) -> AssetCheckResult:
    return _result("run_scores", run_scores)


@asset_check(
    asset=kpi_daily,
    blocking=True,
    partitions_def=day_partitions,
    description="kpi_daily satisfies its data-quality suite (core.data_quality): one row per "
    "key, rates in [0, 1], the interval around the rate, counts nested.",
)
def kpi_daily_quality(kpi_daily: pd.DataFrame) -> AssetCheckResult:
    return _result("kpi_daily", kpi_daily)


DATA_QUALITY_CHECKS = [run_scores_quality, kpi_daily_quality]
