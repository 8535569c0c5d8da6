"""Run every task with every main-channel agent in a real browser, then score every run."""

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue

from newsbench_dagster.core.agents.protocol import build_agent
from newsbench_dagster.core.analytics.tables import frame, records
from newsbench_dagster.core.harness.build import build_runner
from newsbench_dagster.core.harness.runner import run_tasks
from newsbench_dagster.core.partition_artifacts import (
    ARTIFACT_ATTEMPT,
    attempt_folder,
    runs_folder,
)
from newsbench_dagster.core.report import charts
from newsbench_dagster.core.report.markdown import classes_by_intent, runs_table
from newsbench_dagster.core.scoring.judgement import keep
from newsbench_dagster.core.scoring.score import per_agent, score_safely
from newsbench_dagster.core.scoring.witness import AMBIGUOUS, apply_witness
from newsbench_dagster.core.tasks.produce import RESERVE
from newsbench_dagster.defs.partitions import BROWSER_POOL, partition_of, site_day_asset
from newsbench_dagster.defs.progress import RunLog
from newsbench_dagster.resources import (
    AgentRegistryResource,
    ArtifactStoreResource,
    BrowserResource,
    NewsroomResource,
    SiteRegistryResource,
)


@site_day_asset(kinds={"python", "duckdb", "chromium"}, pool=BROWSER_POOL)
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
    site, day = partition_of(context)
    registry = sites.load()
    # The day's tasks; the reserve beside them is the release gate's, never run here.
    tasks = [r["task"] for r in records(news_tasks[news_tasks["suite"] != RESERVE], "news_tasks")]
    manifests = agents.main_channel(warn=context.log.warning)  # broken ones skipped, named
    # This attempt's artifacts go beside the previous attempt's, which the rows the warehouse
    # holds point at; the warehouse swaps them when it commits (`core.partition_artifacts`).
    attempt = {
        "store": artifacts.root,
        "folder": runs_folder(site, day),
        "attempt": context.run_id,
    }
    runner = build_runner(
        [build_agent(m) for m in manifests],
        world=newsroom.world(registry.allowed_origins),
        store=artifacts.store(),
        registry=registry,
        # The nightly sweep runs the partition's full task set; recorded with every run.
        settings=browser.settings(
            {"kind": "full", "n": len(tasks), "task_ids": sorted(t["id"] for t in tasks)},
            artifact_folder=attempt_folder(context.run_id),
        ),
        options=browser.options(),
        robots_origins={o for t in tasks for o in t["allowed_origins"]},
    )
    log = RunLog(context, len(tasks) * len(manifests) * browser.trials)
    rows = run_tasks(tasks, day, runner, log.progress) if tasks else []
    for row in rows:  # a request the harness built wrong is ours: loud, never quiet
        if row.get("env_failure") == "harness_error":
            context.log.error(f"harness error in run {row['run_id']}: {row.get('error')}")
    df = frame("agent_runs", rows)
    context.add_output_metadata(
        {
            "runs": len(df),
            "agents": MetadataValue.json([m.agent_version for m in manifests]),
            "run_status": MetadataValue.json(dict(log.statuses)),
            "env_failures": int(df["env_failure"].notna().sum()),
            "runs_table": MetadataValue.md(runs_table(rows)),
            "artifacts_root": MetadataValue.path(artifacts.root),
            ARTIFACT_ATTEMPT: MetadataValue.json(attempt),
        }
    )
    return df


@site_day_asset()
def run_scores(
    context: AssetExecutionContext,
    agent_runs: pd.DataFrame,
    news_tasks: pd.DataFrame,
    browser: BrowserResource,
    artifacts: ArtifactStoreResource,
) -> pd.DataFrame:
    """Accuracy, timeliness, efficiency, reward, success and the one failure class per run;
    environment failures, and tasks the witness finds ambiguous, are excluded with the reason.
    Each run's judgement goes beside its run.json (`judgement.json`)."""
    tasks = {r["task_id"]: r["task"] for r in records(news_tasks, "news_tasks")}
    runs = records(agent_runs, "agent_runs")
    rows = [score_safely(run, tasks.get(run["task_id"]), base_dir=browser.base_dir) for run in runs]
    rows = apply_witness(rows)
    store = artifacts.store()
    for run, score in zip(runs, rows, strict=True):
        keep(store, run, score)  # beside run.json: what was judged, and why
    df = frame("run_scores", rows)
    scored = df[~df["excluded"].astype(bool)]
    by_agent = per_agent(rows)
    for agent, counts in by_agent.items():
        if counts["runs"] and not counts["scored"]:
            context.log.warning(
                f"{agent}: no run was scored, all {counts['runs']} excluded "
                f"({counts['excluded_as']})"
            )
    context.add_output_metadata(
        {
            "runs": len(df),
            "excluded": int(df["excluded"].astype(bool).sum()),
            "ambiguous": int((df["failure_class"] == AMBIGUOUS).sum()),
            "success_rate": float(scored["success"].astype(bool).mean()) if len(scored) else None,
            "by_agent": MetadataValue.json(by_agent),
            "by_intent_and_class": MetadataValue.md(classes_by_intent(rows)),
            "failures": MetadataValue.md(
                charts.markdown_image(charts.failure_taxonomy(rows, "intent"), "failures by intent")
            ),
        }
    )
    return df
