"""Stage 3: run every task with every main-channel agent in a real browser."""

from collections import Counter

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue, asset

from newsbench_dagster.assets.feeds import partition_of
from newsbench_dagster.core.agents.protocol import build_agent
from newsbench_dagster.core.analytics.tables import frame, records
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.web.network import Fetcher, RobotsRules
from newsbench_dagster.partitions import SITE_DAY_EXPR, site_day_partitions
from newsbench_dagster.resources import (
    AgentRegistryResource,
    ArtifactStoreResource,
    BrowserResource,
    NewsroomResource,
    SiteRegistryResource,
)


@asset(
    partitions_def=site_day_partitions,
    group_name="runs",
    metadata={"partition_expr": SITE_DAY_EXPR},
    kinds={"python", "duckdb", "chromium"},
)
def agent_runs(
    context: AssetExecutionContext,
    news_tasks: pd.DataFrame,
    sites: SiteRegistryResource,
    agents: AgentRegistryResource,
    newsroom: NewsroomResource,
    browser: BrowserResource,
    artifacts: ArtifactStoreResource,
) -> pd.DataFrame:
    """One row per (task, agent, trial): trajectory, answers, the harness's own observation of
    the page, request log, environment manifest and artifact URIs."""
    _, day = partition_of(context)
    registry = sites.load()
    tasks = [r["task"] for r in records(news_tasks, "news_tasks")]
    manifests = agents.main_channel()
    routing = newsroom.routing(registry.allowed_origins)
    with Fetcher(routing, registry.allowed_origins) as fetcher:
        robots = RobotsRules.fetch(fetcher, {o for t in tasks for o in t["allowed_origins"]})
    runner = Runner(
        [build_agent(m) for m in manifests],
        options=browser.options(routing),
        robots=robots,
        store=artifacts.store(),
        # Page loads are spaced per origin across the pool, as the sites ask.
        settings=browser.settings(
            {
                o: s.rate_limit.min_interval_seconds
                for s in registry.sites
                for o in s.allowed_origins
            },
            # The nightly sweep runs the partition's full task set; recorded with every run.
            task_set={"kind": "full", "n": len(tasks), "task_ids": sorted(t["id"] for t in tasks)},
        ),
        world=newsroom.world(),
    )
    total = len(tasks) * len(manifests) * browser.trials
    done = Counter()

    def progress(row: dict) -> None:
        done[row["run_status"]] += 1
        context.log.info(
            f"run {sum(done.values())}/{total}: {row['intent']} "
            f"{row['agent_version']} -> {row['run_status']}"
            + (f" ({row['env_failure']})" if row["env_failure"] else "")
        )

    rows = run_tasks(tasks, day, runner, progress) if tasks else []
    df = frame("agent_runs", rows)
    context.add_output_metadata(
        {
            "runs": len(df),
            "agents": MetadataValue.json([m.agent_version for m in manifests]),
            "run_status": MetadataValue.json(dict(done)),
            "env_failures": int(df["env_failure"].notna().sum()),
        }
    )
    return df
