"""The daily KPI rollup across all sites."""

import pandas as pd
from dagster import (
    AssetExecutionContext,
    AssetIn,
    AssetSelection,
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
from newsbench_dagster.core.report import charts
from newsbench_dagster.core.tasks.produce import RESERVE
from newsbench_dagster.defs.partitions import day_asset

ALL_SITES_OF_DAY = MultiToSingleDimensionPartitionMapping(partition_dimension_name="day")

# A day's rollup (and report) follows its scores: whenever any site's partition of that day is
# updated, by the CLI, a schedule or a backfill launched from the UI, once none of its inputs is
# still being written. Unlike `eager`, any day (not only the latest) and with sites missing (a
# backfill of one site still rolls up); the rollup's own history is not a trigger. The
# `automation` sensor (defs/kpis/sensors.py, on by default) evaluates it when the daemon runs.
_KPI_HISTORY = AssetSelection.assets("kpi_daily")
FOLLOWS_ITS_DAY = (
    AutomationCondition.any_deps_updated().ignore(_KPI_HISTORY).since_last_handled()
    & ~AutomationCondition.any_deps_in_progress().ignore(_KPI_HISTORY)
    & ~AutomationCondition.in_progress()
).with_label("follows its day's scores")


@day_asset(
    ins={
        "run_scores": AssetIn(partition_mapping=ALL_SITES_OF_DAY),
        "news_tasks": AssetIn(partition_mapping=ALL_SITES_OF_DAY),
        "site_drift": AssetIn(partition_mapping=ALL_SITES_OF_DAY),
        # The two weeks before, for the plot of success over days.
        "kpi_history": AssetIn(
            key="kpi_daily",
            partition_mapping=TimeWindowPartitionMapping(start_offset=-14, end_offset=-1),
        ),
    },
    automation_condition=FOLLOWS_ITS_DAY,
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
    daily = news_tasks[news_tasks["suite"] != RESERVE]  # coverage: of the tasks the day runs
    per_site = daily.groupby("site")["task_id"].nunique().to_dict() if len(daily) else {}
    # Drift sensitivity: the baseline's success delta on a site whose template changed today.
    drift = {
        r["site"]: r["baseline_delta"]
        for r in records(site_drift, "site_drift")
        if r["template_changed"] and r["baseline_delta"] is not None
    }
    rows = [{**r, "day": day} for r in rollup(run_scores, per_site, drift=drift or None)]
    df = frame("kpi_daily", rows)
    today = records(df, "kpi_daily")
    over_days = records(kpi_history, "kpi_daily") + today
    context.add_output_metadata(
        {
            "rows": len(df),
            "overall": MetadataValue.md(overall_table(today)),
            "per_site": MetadataValue.md(per_site_table(today)),
            "success_over_days": MetadataValue.md(
                charts.markdown_image(
                    charts.success_over_days(over_days), "success over days, all sites"
                )
            ),
            "success_by_site": MetadataValue.md(
                charts.markdown_image(charts.success_by_site(today), "success by site")
            ),
            "success_over_days_table": MetadataValue.md(success_over_days(over_days)),
        }
    )
    return df
