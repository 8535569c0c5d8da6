"""Stage 5: the daily KPI rollup across all sites."""

import pandas as pd
from dagster import (
    AssetExecutionContext,
    AssetIn,
    AutomationCondition,
    MetadataValue,
    MultiToSingleDimensionPartitionMapping,
    TimeWindowPartitionMapping,
    asset,
)

from newsbench_dagster.core.analytics.kpis import rollup, success_over_days
from newsbench_dagster.core.analytics.tables import frame, records
from newsbench_dagster.partitions import day_partitions

_ALL_SITES_OF_DAY = MultiToSingleDimensionPartitionMapping(partition_dimension_name="day")


@asset(
    partitions_def=day_partitions,
    group_name="kpis",
    metadata={"partition_expr": "day"},
    kinds={"python", "duckdb"},
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
    changed = site_drift[site_drift["template_changed"].fillna(False).astype(bool)]
    drift = {
        r["site"]: r["baseline_delta"]
        for r in records(changed, "site_drift")
        if r["baseline_delta"] is not None
    }
    rows = [{**r, "day": day} for r in rollup(run_scores, per_site, drift=drift or None)]
    df = frame("kpi_daily", rows)
    history = records(kpi_history, "kpi_daily") + records(df, "kpi_daily")
    overall = df[(df["slice_kind"] == "all")]
    lines = [
        "| site | agent | scored | success | env failures | reward |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.site} | {r.agent_version} | {r.n_scored} | "
        f"{'-' if pd.isna(r.success_rate) else f'{r.success_rate:.2f}'} | "
        f"{r.n_env_failures} | {'-' if pd.isna(r.mean_reward) else f'{r.mean_reward:.3f}'} |"
        for r in overall.itertuples()
    ]
    context.add_output_metadata(
        {
            "rows": len(df),
            "overall": MetadataValue.md("\n".join(lines)),
            "per_site": MetadataValue.md(_per_site_table(overall)),
            "success_over_days": MetadataValue.md(success_over_days(history)),
        }
    )
    return df


def _num(value: float | None, spec: str) -> str:
    return "-" if value is None or pd.isna(value) else format(value, spec)


def _per_site_table(overall: pd.DataFrame) -> str:
    """Per site (then `*`) and agent version: scored runs, success with its 95 % Wilson
    interval, mean reward."""
    lines = [
        "| site | agent | scored | success [95 % CI] | reward |",
        "|---|---|---|---|---|",
    ]
    ordered = overall.assign(_all=overall["site"] == "*").sort_values(
        ["_all", "site", "agent_version"]
    )
    for r in ordered.itertuples():
        success = _num(r.success_rate, ".2f")
        if success != "-":
            success += f" [{_num(r.success_ci_low, '.2f')}, {_num(r.success_ci_high, '.2f')}]"
        lines.append(
            f"| {r.site} | {r.agent_version} | {r.n_scored} | {success} | "
            f"{_num(r.mean_reward, '.3f')} |"
        )
    return "\n".join(lines)
