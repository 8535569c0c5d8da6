"""One site-day partition of the pipeline (feed_items -> news_tasks -> agent_runs ->
run_scores), materialized through Dagster in this process and recorded in the instance of
DAGSTER_HOME; run as `python -m tests.support.partition_run '<spec json>'` by tests that kill it
(`core.crash_points`)."""

from __future__ import annotations

import json
import sys

from dagster import DagsterInstance, MultiPartitionKey, materialize

from newsbench_dagster.definitions import ASSETS
from newsbench_dagster.resources import BrowserResource, TaskSetResource
from tests.support.pipeline_resources import local_resources

SITE_CHAIN = ["feed_items", "news_tasks", "agent_runs", "run_scores"]


def run(spec: dict) -> bool:
    """`spec`: db, artifacts, port, seed, site, day, intents, and the assets to materialize
    (`selection`, default the whole chain)."""
    resources = local_resources(
        spec["db"],
        spec["artifacts"],
        port=spec["port"],
        seed=spec["seed"],
        # What is tested is the partition's rows and artifacts, not the trace or screenshot.
        browser=BrowserResource(artifacts=["har", "console", "spans"], screenshot=False),
        tasks=TaskSetResource(intents=spec["intents"], articles_per_site=1),
    )
    with DagsterInstance.get() as instance:
        result = materialize(
            ASSETS,
            selection=spec.get("selection") or SITE_CHAIN,
            partition_key=MultiPartitionKey({"site": spec["site"], "day": spec["day"]}),
            resources=resources,
            instance=instance,
            raise_on_error=False,
        )
    return result.success


if __name__ == "__main__":
    sys.exit(0 if run(json.loads(sys.argv[1])) else 1)
