"""Running a release evaluation: both agents on every task, interleaved (A B, then B A, per
task and trial), with repeated trials; a run the environment broke is rerun up to
`max_reruns` times, every attempt kept and the one that counts marked."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from newsbench_dagster.core.agents.protocol import Agent, AgentManifest, build_agent
from newsbench_dagster.core.artifacts import ArtifactStore
from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.harness.build import build_runner, fetch_robots
from newsbench_dagster.core.harness.runner import run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.release.plan import TaskSet
from newsbench_dagster.core.release.policy import Policy
from newsbench_dagster.core.scoring.failures import is_environment_failure
from newsbench_dagster.core.scoring.judgement import keep
from newsbench_dagster.core.scoring.score import score_safely
from newsbench_dagster.core.scoring.witness import apply_witness
from newsbench_dagster.core.web.network import World
from newsbench_dagster.core.web.sites import SiteRegistry

CANDIDATE, BASELINE = "candidate", "baseline"


@dataclass
class Evaluation:
    runs: list[dict]  # candidate_runs rows: every attempt
    scores: list[dict]  # candidate_scores rows: every attempt


def _is_env(score: dict) -> bool:
    return bool(score.get("excluded")) and is_environment_failure(score.get("failure_class"))


_CARRIED = ("candidate_version", "role", "attempt", "counted", "look")


def finish_scores(runs: list[dict], scores: dict[str, dict]) -> list[dict]:
    """`candidate_scores` rows: each run's score (by run id) with role, attempt and counted
    carried over from its run, the witness judging the counted runs."""
    # Rows written before the gate had looks carry none: they were its first.
    carried = [{"look": 1, **{k: r[k] for k in _CARRIED if k in r}} for r in runs]
    rows = [{**scores[r["run_id"]], **c} for r, c in zip(runs, carried, strict=True)]
    witnessed = {s["run_id"]: s for s in apply_witness([s for s in rows if s["counted"]])}
    return [witnessed.get(s["run_id"], s) for s in rows]


def score_evaluation(
    runs: list[dict], tasks: dict[str, dict], *, base_dir: str | None = None
) -> list[dict]:
    """Every attempt of a stored evaluation scored by the independent checkers."""
    scores = {
        r["run_id"]: score_safely(r, tasks.get(r["task_id"]), base_dir=base_dir) for r in runs
    }
    return finish_scores(runs, scores)


def evaluate(
    candidate: Agent,
    baseline: Agent,
    task_set: TaskSet,
    day: date,
    runner_for: Callable[[list[Agent]], Any],
    *,
    max_reruns: int = 2,
    progress: Callable[[dict], None] | None = None,
    look: int = 1,
    tasks: list[dict] | None = None,
) -> Evaluation:
    """Run both agents on every task (`tasks`: the look's batch of the set, default all of
    it), interleaved (the runner `runner_for` builds must have `interleave` and the trials
    set), rerun environment failures, and score every attempt; rows carry their `look`."""
    cand_v, base_v = candidate.manifest.agent_version, baseline.manifest.agent_version
    if cand_v == base_v:
        raise ValueError(f"candidate and baseline are the same version ({cand_v})")
    role = {cand_v: CANDIDATE, base_v: BASELINE}
    todo_tasks = task_set.tasks if tasks is None else tasks
    by_id = {t["id"]: t for t in todo_tasks}
    namespace = f"release:{cand_v}"  # the baseline's runs here are not its nightly runs
    runner = runner_for([candidate, baseline])
    runner.settings.namespace = namespace
    if not runner.settings.interleave:
        raise ValueError("a release evaluation runs interleaved (RunSettings.interleave)")
    base_dir = runner.settings.base_dir

    def score(row: dict) -> dict:
        return score_safely(row, by_id.get(row["task_id"]), base_dir=base_dir)

    slots = {
        (t["id"], a.manifest.agent_version, trial): i
        for i, (t, a, trial) in enumerate(runner.schedule(todo_tasks))
    }
    rows = run_tasks(todo_tasks, day, runner, progress)
    for r in rows:
        r["attempt"] = 0
    scores = {r["run_id"]: score(r) for r in rows}
    attempts: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        attempts[(r["task_id"], r["agent_version"], r["trial"])].append(r)
    agents = {cand_v: candidate, base_v: baseline}
    for attempt in range(1, max_reruns + 1):
        todo = [key for key, tried in attempts.items() if _is_env(scores[tried[-1]["run_id"]])]
        if not todo:
            break
        for version in (cand_v, base_v):
            for trial in sorted({k[2] for k in todo if k[1] == version}):
                # One batch per trial, so a task appears once and its row maps back by id.
                mine = {k[0]: k for k in todo if k[1] == version and k[2] == trial}
                rerunner = runner_for([agents[version]])
                rerunner.settings.trials, rerunner.settings.first_trial = 1, trial
                rerunner.settings.attempt, rerunner.settings.namespace = attempt, namespace
                batch = [by_id[t] for t in mine]
                for row in run_tasks(batch, day, rerunner, progress):
                    key = mine[row["task_id"]]
                    row["attempt"] = attempt
                    scores[row["run_id"]] = score(row)
                    attempts[key].append(row)
                    rows.append(row)
    # The first attempt that is not an environment failure counts, else the last one.
    counted = {
        next((r for r in tried if not _is_env(scores[r["run_id"]])), tried[-1])["run_id"]
        for tried in attempts.values()
    }
    out_runs = [
        {
            **r,
            "candidate_version": cand_v,
            "role": role[r["agent_version"]],
            "attempt": r["attempt"],
            "counted": r["run_id"] in counted,
            "slot": slots.get((r["task_id"], r["agent_version"], r["trial"])),
            "look": look,
        }
        for r in rows
    ]
    finished = finish_scores(out_runs, scores)
    for row, judged in zip(out_runs, finished, strict=True):  # the witness's say included
        keep(runner.store, row, judged)
    return Evaluation(out_runs, finished)


def run_evaluation(
    candidate: AgentManifest,
    baseline: AgentManifest,
    task_set: TaskSet,
    day: date,
    policy: Policy,
    *,
    world: World,
    store: ArtifactStore,
    registry: SiteRegistry,
    settings: RunSettings,
    options: BrowserOptions | None = None,
    progress: Callable[[dict], None] | None = None,
    look: int = 1,
    tasks: list[dict] | None = None,
) -> Evaluation:
    """One look of a release evaluation as the pipeline and `newsbench gate` run it: the
    harness built the one way (`core.harness.build`), the policy's trials, interleaved, its
    reruns (`core.release.looks` runs the looks)."""
    robots = fetch_robots(world, registry)

    def runner_for(agents: list[Agent]):
        batch = replace(
            settings, trials=policy.trials, interleave=True, task_set=task_set.description
        )
        return build_runner(
            agents,
            world=world,
            store=store,
            registry=registry,
            settings=batch,
            options=options,
            robots=robots,
        )

    return evaluate(
        build_agent(candidate),
        build_agent(baseline),
        task_set,
        day,
        runner_for,
        max_reruns=policy.max_reruns,
        progress=progress,
        look=look,
        tasks=tasks,
    )
