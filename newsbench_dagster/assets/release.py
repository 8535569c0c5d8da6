"""Stage 6: the release path. A candidate agent version (one `agent_version` partition) runs
against the shipped baseline on the same tasks, is scored, and gets a decision record."""

from collections import Counter
from datetime import UTC, datetime, timedelta

import pandas as pd
from dagster import (
    AllPartitionMapping,
    AssetExecutionContext,
    AssetIn,
    MetadataValue,
    asset,
)

from newsbench_dagster.core.agents.protocol import build_agent, load_manifests
from newsbench_dagster.core.analytics.tables import frame, records
from newsbench_dagster.core.harness.runner import Runner
from newsbench_dagster.core.release.decide import (
    CANDIDATE,
    decide,
    decision_row,
    evaluate,
    plan_task_set,
)
from newsbench_dagster.core.scoring.score import score_safely
from newsbench_dagster.core.scoring.witness import apply_witness
from newsbench_dagster.core.web.network import Fetcher, RobotsRules
from newsbench_dagster.partitions import CANDIDATE_EXPR, agent_version_partitions
from newsbench_dagster.resources import (
    AgentRegistryResource,
    ArtifactStoreResource,
    BrowserResource,
    NewsroomResource,
    SiteRegistryResource,
)
from newsbench_dagster.resources.release import ReleaseResource

_META = {"partition_expr": CANDIDATE_EXPR}


def task_set_key(version: str) -> str:
    """Where an evaluation keeps its exact task set (tasks, gating, baseline) for the
    stages after it: the tasks are too big to repeat in every run row."""
    return f"release/{version}/task_set.json"


def _load_task_set(artifacts: ArtifactStoreResource, version: str) -> dict:
    saved = artifacts.store().read_json(task_set_key(version))
    if not isinstance(saved, dict):
        raise FileNotFoundError(
            f"no task set for {version} at {task_set_key(version)}: "
            "materialize candidate_runs for this partition first"
        )
    return saved


def _drifted(site_drift: pd.DataFrame) -> dict[str, list[str]]:
    """Sites drifted on their latest assessed day (site -> reasons)."""
    from newsbench_dagster.core.analytics.drift import drifted_sites

    if site_drift.empty:
        return {}
    latest = site_drift.sort_values("day").groupby("site").tail(1)
    return drifted_sites(records(latest, "site_drift"))


@asset(
    partitions_def=agent_version_partitions,
    group_name="release",
    metadata=_META,
    kinds={"python", "duckdb", "chromium"},
    # Held-out tasks are drawn from the recent days of every site; drifted sites are marked.
    ins={
        "news_tasks": AssetIn(partition_mapping=AllPartitionMapping()),
        "site_drift": AssetIn(partition_mapping=AllPartitionMapping()),
    },
)
def candidate_runs(
    context: AssetExecutionContext,
    news_tasks: pd.DataFrame,
    site_drift: pd.DataFrame,
    sites: SiteRegistryResource,
    agents: AgentRegistryResource,
    newsroom: NewsroomResource,
    browser: BrowserResource,
    artifacts: ArtifactStoreResource,
    release: ReleaseResource,
) -> pd.DataFrame:
    """The candidate and the baseline on the same tasks (regression suite, held-out sample of
    recent news_tasks, adversarial slice), interleaved, with repeated trials; environment
    failures rerun, every attempt kept."""
    version = context.partition_key
    manifests = load_manifests(agents.directory)
    by_version = {m.agent_version: m for m in manifests}
    if version not in by_version:
        raise ValueError(
            f"agent version {version} has no manifest in {agents.directory} "
            f"(known: {', '.join(sorted(by_version))})"
        )
    cand_m = by_version[version]
    base_m = release.baseline_for(cand_m, manifests)
    registry = sites.load()
    keys = release.sites or [s.key for s in registry.sites]
    day = datetime.now(UTC).date()
    since = pd.Timestamp(day - timedelta(days=release.heldout_days - 1))
    recent = [r["task"] for r in records(news_tasks[news_tasks["day"] >= since], "news_tasks")]
    routing = newsroom.routing(registry.allowed_origins)
    with Fetcher(routing, registry.allowed_origins) as fetcher:
        robots = RobotsRules.fetch(fetcher, registry.allowed_origins)
        task_set = plan_task_set(
            registry,
            fetcher,
            suites_dir=release.suites_dir,
            recent=recent,
            day=day,
            sites=keys,
            intents=release.intents,
            heldout_n=release.heldout_n,
            seed=release.seed,
            drifted=_drifted(site_drift),
            warn=context.log.warning,
        )
    artifacts.store().put_json(
        task_set_key(version),
        {
            "candidate_version": version,
            "baseline_version": base_m.agent_version,
            "revision": task_set.revision,
            "description": task_set.description,
            "gating": task_set.gating,
            "tasks": task_set.tasks,
        },
    )
    intervals = {
        o: s.rate_limit.min_interval_seconds for s in registry.sites for o in s.allowed_origins
    }

    def runner_for(agent_list):
        settings = browser.settings(intervals, task_set=task_set.description)
        settings.trials, settings.interleave = release.trials, True
        return Runner(
            agent_list,
            options=browser.options(routing),
            robots=robots,
            store=artifacts.store(),
            settings=settings,
            world=newsroom.world(),
        )

    total = len(task_set.tasks) * 2 * release.trials
    done = Counter()

    def progress(row: dict) -> None:
        done[row["run_status"]] += 1
        context.log.info(
            f"run {sum(done.values())}/{total}: {row['agent_version']} {row['intent']} "
            f"-> {row['run_status']}"
        )

    ev = evaluate(
        build_agent(cand_m),
        build_agent(base_m),
        task_set,
        day,
        runner_for,
        max_reruns=release.max_reruns,
        progress=progress,
    )
    df = frame("candidate_runs", ev.runs)
    context.add_output_metadata(
        {
            "baseline": base_m.agent_version,
            "tasks": MetadataValue.json(task_set.description["counts"]),
            "heldout_source": task_set.description["heldout"]["source"],
            "runs": len(df),
            "reruns": int((df["attempt"] > 0).sum()),
            "dataset_revision": task_set.revision,
        }
    )
    return df


@asset(
    partitions_def=agent_version_partitions,
    group_name="release",
    metadata=_META,
    kinds={"python", "duckdb"},
)
def candidate_scores(
    context: AssetExecutionContext,
    candidate_runs: pd.DataFrame,
    artifacts: ArtifactStoreResource,
) -> pd.DataFrame:
    """Every attempt scored by the independent checkers (the witness judging counted runs);
    role, attempt and `counted` carried over from the runs."""
    saved = _load_task_set(artifacts, context.partition_key)
    tasks = {t["id"]: t for t in saved["tasks"]}
    runs = records(candidate_runs, "candidate_runs")
    keep = ("candidate_version", "role", "attempt", "counted")
    scores = [{**score_safely(r, tasks.get(r["task_id"])), **{k: r[k] for k in keep}} for r in runs]
    witnessed = {s["run_id"]: s for s in apply_witness([s for s in scores if s["counted"]])}
    rows = [witnessed.get(s["run_id"], s) for s in scores]
    df = frame("candidate_scores", rows)
    counted = df[df["counted"].astype(bool) & ~df["excluded"].astype(bool)]
    context.add_output_metadata(
        {
            "runs": len(df),
            "counted_scored": len(counted),
            "success_by_role": MetadataValue.json(
                {
                    role: round(float(g["success"].astype(bool).mean()), 4)
                    for role, g in counted.groupby("role")
                }
            ),
        }
    )
    return df


@asset(
    partitions_def=agent_version_partitions,
    group_name="release",
    metadata=_META,
    kinds={"python", "duckdb"},
    ins={"site_drift": AssetIn(partition_mapping=AllPartitionMapping())},
)
def release_decision(
    context: AssetExecutionContext,
    candidate_scores: pd.DataFrame,
    candidate_runs: pd.DataFrame,
    site_drift: pd.DataFrame,
    agents: AgentRegistryResource,
    artifacts: ArtifactStoreResource,
    release: ReleaseResource,
) -> pd.DataFrame:
    """The decision record: dataset revision, environment, model, prompt hash, adapter,
    policy, oracle version, sample counts, per-slice results with intervals, critical
    failures, verdict and reasons. The gates (asset checks) read it."""
    version = context.partition_key
    saved = _load_task_set(artifacts, version)
    manifest = {m.agent_version: m for m in load_manifests(agents.directory)}.get(version)
    if manifest is None:
        raise ValueError(f"agent version {version} has no manifest in {agents.directory}")
    drifted = _drifted(site_drift)
    runs = records(candidate_runs, "candidate_runs")
    decision = decide(
        records(candidate_scores, "candidate_scores"),
        runs,
        gating=saved["gating"],
        candidate_version=version,
        baseline_version=saved["baseline_version"],
        policy=release.policy(),
        drifted={s: w for s, w in drifted.items() if s in saved["description"]["sites"]},
    )
    env = next((r["environment"] for r in runs if r["role"] == CANDIDATE), {}) or {}
    environment = {k: v for k, v in env.items() if k not in ("task_seed", "drawn")}
    row = decision_row(
        decision,
        task_set=saved["description"],
        candidate=manifest,
        environment=environment,
        day=datetime.now(UTC).date(),
        dataset_revision=saved["revision"],
    )
    sites = [s for s in decision["slices"] if s["kind"] == "site"]
    site_table = "\n".join(
        [
            "| site | candidate | baseline | difference [interval] | verdict |",
            "|---|---|---|---|---|",
            *[
                f"| {s['value']} | {s['candidate']['success']} | {s['baseline']['success']} | "
                + (
                    f"{s['diff']['diff']:+.3f} [{s['diff']['low']:+.3f}, {s['diff']['high']:+.3f}]"
                    if s["diff"]
                    else "-"
                )
                + f" | {s['verdict']} |"
                for s in sites
            ],
        ]
    )
    context.add_output_metadata(
        {
            "verdict": decision["verdict"],
            "decision": MetadataValue.md(row["markdown"]),
            "per_site": MetadataValue.md(site_table),
            "diff": row["diff"],
            "diff_low": row["diff_low"],
            "diff_high": row["diff_high"],
            "reasons": MetadataValue.json(decision["reasons"]),
        }
    )
    return frame("release_decision", [row])
