"""The release path. A candidate agent version (one `agent_version` partition) runs against
the shipped baseline on the same tasks, is scored, and gets a decision record. The plan, the
evaluation and the decision are `core.release`'s; `newsbench gate` calls the same functions."""

from datetime import UTC, datetime, timedelta

import pandas as pd
from dagster import AllPartitionMapping, AssetExecutionContext, AssetIn, MetadataValue

from newsbench_dagster.core.analytics.drift import drifted_sites
from newsbench_dagster.core.analytics.tables import frame, records
from newsbench_dagster.core.release.decide import decide_saved, decision_row, site_table
from newsbench_dagster.core.release.evaluate import (
    CANDIDATE,
    score_evaluation,
)
from newsbench_dagster.core.release.looks import earlier_scores, resume, run_release
from newsbench_dagster.core.release.plan import plan_task_set, task_set_key
from newsbench_dagster.defs.partitions import BROWSER_POOL, candidate_asset
from newsbench_dagster.defs.progress import RunLog
from newsbench_dagster.resources import (
    AgentRegistryResource,
    ArtifactStoreResource,
    BrowserResource,
    NewsroomResource,
    ReleaseResource,
    SiteRegistryResource,
)

_ALL = AssetIn(partition_mapping=AllPartitionMapping())


def _manifest(agents: AgentRegistryResource, version: str):
    found = agents.scan()  # another version's broken manifest does not stop this one
    manifests = found.manifests
    by_version = {m.agent_version: m for m in manifests}
    if version not in by_version:
        broken = f"; broken: {'; '.join(b.error for b in found.broken)}" if found.broken else ""
        raise ValueError(
            f"agent version {version} has no manifest in {agents.directory} "
            f"(known: {', '.join(sorted(by_version))}{broken})"
        )
    return by_version[version], manifests


def _saved_task_set(artifacts: ArtifactStoreResource, version: str) -> dict:
    saved = artifacts.store().read_json(task_set_key(version))
    if not isinstance(saved, dict):
        raise FileNotFoundError(
            f"no task set for {version} at {task_set_key(version)}: "
            "materialize candidate_runs for this partition first"
        )
    return saved


# Held-out tasks are drawn from the recent days of every site; drifted sites are marked.
@candidate_asset(
    kinds={"python", "duckdb", "chromium"},
    ins={"news_tasks": _ALL, "site_drift": _ALL},
    pool=BROWSER_POOL,
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
    failures rerun, every attempt kept. One look of the sequential gate per materialization:
    while the evidence is insufficient, the next materialization of the partition runs the
    next look (the agent registry sensor requests it) on the same task set, and the rows are
    every look's so far; a materialization that crashed is taken up again at its look."""
    version = context.partition_key
    candidate, manifests = _manifest(agents, version)
    baseline = release.baseline_for(candidate, manifests)
    policy = release.policy()
    registry = sites.load()
    world = newsroom.world(registry.allowed_origins)
    store = artifacts.store()
    day = datetime.now(UTC).date()
    resumed, why = resume(store, version, baseline.agent_version, policy)
    context.log.info(why)
    if resumed is not None:
        task_set = resumed.task_set
        todo = policy.heldout_n
    else:
        since = pd.Timestamp(day - timedelta(days=policy.heldout_days - 1))
        recent = [r["task"] for r in records(news_tasks[news_tasks["day"] >= since], "news_tasks")]
        task_set = plan_task_set(
            registry,
            world,
            policy,
            suites_dir=release.suites_dir,
            recent=recent,
            day=day,
            drifted=drifted_sites(records(site_drift, "site_drift")),
            warn=context.log.warning,
        )
        todo = len(task_set.tasks)
    log = RunLog(context, todo * 2 * policy.trials)
    ev, decision = run_release(
        candidate,
        baseline,
        task_set,
        day,
        policy,
        log=context.log.info,
        looks=1,
        resumed=resumed,
        world=world,
        store=store,
        registry=registry,
        settings=browser.settings(),
        options=browser.options(),
        progress=log.progress,
    )
    df = frame("candidate_runs", ev.runs)
    context.add_output_metadata(
        {
            "baseline": baseline.agent_version,
            "tasks": MetadataValue.json(task_set.description["counts"]),
            "heldout_source": task_set.description["heldout"]["source"],
            "runs": len(df),
            "reruns": int((df["attempt"] > 0).sum()),
            "dataset_revision": task_set.revision,
            "looks": decision["sequential"]["look"],
            "verdict_at_last_look": decision["verdict"],
            # "open": a next look is due; the next materialization of the partition runs it.
            "stopped": decision["sequential"]["stopped"],
            "resumed": resumed is not None,
        }
    )
    return df


@candidate_asset()
def candidate_scores(
    context: AssetExecutionContext,
    candidate_runs: pd.DataFrame,
    artifacts: ArtifactStoreResource,
    browser: BrowserResource,
) -> pd.DataFrame:
    """Every attempt scored by the independent checkers (the witness judging counted runs);
    role, attempt and `counted` carried over from the runs. The runs of the looks before the
    last keep the scores the same checkers gave them when their look ended (kept with the
    look's rows): a task's runs all belong to one look, so the witness judges them alike
    either way, and a twelfth look does not score eleven looks again."""
    version = context.partition_key
    saved = _saved_task_set(artifacts, version)
    tasks = {t["id"]: t for t in saved["tasks"]}
    runs = records(candidate_runs, "candidate_runs")
    kept = earlier_scores(artifacts.store(), version, saved)
    fresh = [r for r in runs if r["run_id"] not in kept]
    rows = score_evaluation(fresh, tasks, base_dir=browser.base_dir)
    rows += [kept[r["run_id"]] for r in runs if r["run_id"] in kept]
    df = frame("candidate_scores", rows)
    counted = df[df["counted"].astype(bool) & ~df["excluded"].astype(bool)]
    context.add_output_metadata(
        {
            "runs": len(df),
            "scored_now": len(fresh),
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


@candidate_asset(ins={"site_drift": _ALL})
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
    saved = _saved_task_set(artifacts, version)
    manifest, _ = _manifest(agents, version)
    runs = records(candidate_runs, "candidate_runs")
    decision = decide_saved(
        records(candidate_scores, "candidate_scores"),
        runs,
        saved,
        release.policy(),
        drifted_sites(records(site_drift, "site_drift")),
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
    context.add_output_metadata(
        {
            "verdict": decision["verdict"],
            "decision": MetadataValue.md(row["markdown"]),
            "per_site": MetadataValue.md(site_table(decision)),
            "diff": row["diff"],
            "diff_low": row["diff_low"],
            "diff_high": row["diff_high"],
            "reasons": MetadataValue.json(decision["reasons"]),
        }
    )
    return frame("release_decision", [row])
