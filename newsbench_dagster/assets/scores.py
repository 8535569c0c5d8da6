"""Stage 4: score every run with the independent checkers and the time-aware reward."""

import pandas as pd
from dagster import AssetExecutionContext, asset

from newsbench_dagster.core.analytics.tables import frame, records
from newsbench_dagster.core.scoring.score import score_safely
from newsbench_dagster.core.scoring.witness import AMBIGUOUS, apply_witness
from newsbench_dagster.partitions import SITE_DAY_EXPR, site_day_partitions


@asset(
    partitions_def=site_day_partitions,
    group_name="scores",
    metadata={"partition_expr": SITE_DAY_EXPR},
    kinds={"python", "duckdb"},
)
def run_scores(
    context: AssetExecutionContext, agent_runs: pd.DataFrame, news_tasks: pd.DataFrame
) -> pd.DataFrame:
    """Accuracy, timeliness, efficiency, reward, success and the one failure class per run;
    environment failures, and tasks the witness finds ambiguous, are excluded with the reason."""
    tasks = {r["task_id"]: r["task"] for r in records(news_tasks, "news_tasks")}
    rows = [
        score_safely(run, tasks.get(run["task_id"])) for run in records(agent_runs, "agent_runs")
    ]
    rows = apply_witness(rows)
    df = frame("run_scores", rows)
    scored = df[~df["excluded"].astype(bool)]
    context.add_output_metadata(
        {
            "runs": len(df),
            "excluded": int(df["excluded"].astype(bool).sum()),
            "ambiguous": int((df["failure_class"] == AMBIGUOUS).sum()),
            "success_rate": float(scored["success"].astype(bool).mean()) if len(scored) else None,
        }
    )
    return df
