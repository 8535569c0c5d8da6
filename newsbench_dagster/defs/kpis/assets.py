"""The daily KPI rollup across all sites."""

import pandas as pd
from dagster import (
    AssetExecutionContext,
    AssetIn,
    AutomationCondition,
    MetadataValue,
    MultiToSingleDimensionPartitionMapping,
    TimeWindowPartitionMapping,
)

from newsbench_dagster.core.analytics.kpis import (
    overall_table,
    per_site_table,
    rollup,
    success_over_days,
)
from newsbench_dagster.core.analytics.tables import frame, records
from newsbench_dagster.defs.partitions import day_asset

_ALL_SITES_OF_DAY = MultiToSingleDimensionPartitionMapping(partition_dimension_name="day")


@day_asset(
    ins={
        "run_scores": AssetIn(partition_mapping=_ALL_SITES_OF_DAY),
        "news_tasks": AssetIn(partition_mapping=_ALL_SITES_OF_DAY),
        "site_drift": AssetIn(partition_mapping=_ALL_SITES_OF_DAY),
        # The two weeks before, for the plot of success over days.
        "kpi_history": AssetIn(
            key="kpi_daily",
            partition_mapping=TimeWindowPartitionMapping(start_offset=-14, end_offset=-1),
        ),
    },
    # Refresh whenever any site's scores for the day change (needs the daemon: `dagster dev`).
    automation_condition=AutomationCondition.eager(),
)
def kpi_daily(
    context: AssetExecutionContext,
    run_scores: pd.DataFrame,
    news_tasks: pd.DataFrame,
    site_drift: pd.DataFrame,
    kpi_history: pd.DataFrame,
) -> pd.DataFrame:
    """Success rate with a 95 % Wilson interval, reward and its components, TTFC p50/p95,
    steps, tokens (per run and per success), tool-call mix, failure taxonomy, safety incidents,
    PII flags, page load and error rates and coverage per site (and `*`), agent version and
    slice (intent, device, geo, network, locale, risk tier)."""
    day = pd.Timestamp(context.partition_key)
    per_site = news_tasks.groupby("site")["task_id"].nunique().to_dict() if len(news_tasks) else {}
    # Drift sensitivity: the baseline's success delta on a site whose template changed today.
    drift = {
        r["site"]: r["baseline_delta"]
        for r in records(site_drift, "site_drift")
        if r["template_changed"] and r["baseline_delta"] is not None
    }
    rows = [{**r, "day": day} for r in rollup(run_scores, per_site, drift=drift or None)]
    df = frame("kpi_daily", rows)
    today = records(df, "kpi_daily")
    context.add_output_metadata(
        {
            "rows": len(df),
            "overall": MetadataValue.md(overall_table(today)),
            "per_site": MetadataValue.md(per_site_table(today)),
            "success_over_days": MetadataValue.md(
                success_over_days(records(kpi_history, "kpi_daily") + today)
            ),
        }
    )
    return df
