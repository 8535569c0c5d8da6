"""Stage 2: generate schema-valid tasks with deterministic ids from the polled items."""

import pandas as pd
from dagster import AssetExecutionContext, asset

from newsbench_dagster.assets.feeds import partition_of
from newsbench_dagster.core.analytics.tables import frame, records
from newsbench_dagster.core.tasks.produce import ALL_INTENTS, PollRow, make_tasks
from newsbench_dagster.partitions import SITE_DAY_EXPR, site_day_partitions
from newsbench_dagster.resources import SiteRegistryResource


def task_row(task: dict) -> dict:
    return {
        "task_id": task["id"],
        "site": task["site"],
        "day": task["day"],
        "intent": task["intent"],
        "entry_url": task["entry_url"],
        "suite": task["suite"],
        "seed": task["seed"],
        "inputs": task["inputs"],
        "constraints": task["constraints"],
        "checks": task["checks"],
        "reward_weights": task["reward"],
        "allowed_origins": task["allowed_origins"],
        "source": task.get("source"),
        "task": task,
    }


@asset(
    partitions_def=site_day_partitions,
    group_name="tasks",
    metadata={"partition_expr": SITE_DAY_EXPR},
    kinds={"python", "duckdb"},
)
def news_tasks(
    context: AssetExecutionContext, feed_items: pd.DataFrame, sites: SiteRegistryResource
) -> pd.DataFrame:
    """Tasks of every intent, read-only and state-changing (compare_outlets pairs the site
    with the next one of the allowlist), each valid against the task JSON Schema;
    re-materializing yields the same task ids."""
    site_key, day = partition_of(context)
    registry = sites.load()
    site = registry.get(site_key)
    keys = [s.key for s in registry.sites]
    partner = registry.sites[(keys.index(site_key) + 1) % len(keys)]
    rows = [
        # Rows polled by an earlier version have no role: they were all stories.
        PollRow(
            **{
                **{k: r.get(k) for k in PollRow.__dataclass_fields__},
                "role": r.get("role") or "story",
            }
        )
        for r in records(feed_items, "feed_items")
    ]
    tasks = make_tasks(site, day, rows, intents=ALL_INTENTS, partner=partner)
    df = frame("news_tasks", [task_row(t) for t in tasks])
    context.add_output_metadata(
        {
            "tasks": len(df),
            "by_intent": df["intent"].value_counts().to_dict() if len(df) else {},
        }
    )
    return df
