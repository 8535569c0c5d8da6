"""The release task set: the frozen regression suite, a seeded stratified held-out draw from
recent `news_tasks` (or today's feeds when there are none), and the adversarial slice (scored
for safety, never for accuracy); each task with how it is gated, and the dataset revision."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from newsbench_dagster.core.analytics.drift import mark_tasks
from newsbench_dagster.core.release.policy import Policy
from newsbench_dagster.core.tasks.produce import todays_tasks
from newsbench_dagster.core.tasks.sampling import pick, stratified_sample
from newsbench_dagster.core.tasks.suites import load_suites
from newsbench_dagster.core.web.network import Fetcher, World
from newsbench_dagster.core.web.sites import SiteRegistry


@dataclass
class TaskSet:
    """What both agents run, and how each task is gated."""

    tasks: list[dict]
    gating: dict[str, dict[str, str]]  # task id -> {suite, accuracy, safety, reason?}
    description: dict[str, Any] = field(default_factory=dict)
    # Held-out tasks not drawn yet: where a later look of the sequential gate draws from.
    reserve: list[dict] = field(default_factory=list, repr=False)
    drifted: dict[str, list[str]] = field(default_factory=dict, repr=False)
    # How far the evaluation of this set got (`core.release.looks`): the last look that ended,
    # whether a next look is due (`open`), the policy it runs under, the drifted sites.
    progress: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def restored(cls, saved: dict, reserve: list[dict]) -> TaskSet:
        """The set as `saved` kept it, its reserve what `reserve` holds and no look drew."""
        gating = dict(saved["gating"])
        progress = dict(saved.get("progress") or {})
        return cls(
            list(saved["tasks"]),
            gating,
            dict(saved["description"]),
            reserve=[t for t in reserve if t["id"] not in gating],
            drifted=dict(progress.get("drifted") or {}),
            progress=progress,
        )

    def batch_of(self, look: int) -> list[dict]:
        """The tasks look `look` (2 and later) already drew."""
        return [t for t in self.tasks if self.gating[t["id"]].get("look") == look]

    @property
    def revision(self) -> str:
        """The dataset revision: a hash of the tasks exactly as run (ids, seeds, oracles)."""
        body = json.dumps(sorted(self.tasks, key=lambda t: t["id"]), sort_keys=True, default=str)
        return "tasks@" + hashlib.sha256(body.encode()).hexdigest()[:12]

    def saved(self, candidate_version: str, baseline_version: str) -> dict:
        """What is kept at `task_set_key(candidate_version)` for scoring and deciding."""
        return {
            "candidate_version": candidate_version,
            "baseline_version": baseline_version,
            "revision": self.revision,
            "description": self.description,
            "gating": self.gating,
            "tasks": self.tasks,
            "ran_out": bool(self.description.get("ran_out")),
            "progress": {**self.progress, "drifted": self.drifted},
        }

    def draw_look(self, look: int, n: int, seed: int) -> list[dict]:
        """The next look's held-out batch: `n` tasks stratified from the reserve (seeded by the
        look, so a replay draws the same), added to the set, gated as held-out. An empty batch
        means the reserve ran out; the set then says so (`ran_out`)."""
        drawn = stratified_sample(self.reserve, min(n, len(self.reserve)), seed + look - 1)
        batch = pick(self.reserve, drawn)
        if self.drifted:
            batch = mark_tasks(batch, self.drifted)
        taken = {t["id"] for t in batch}
        self.reserve = [t for t in self.reserve if t["id"] not in taken]
        gate = {**_HELDOUT, "look": look}
        for task in batch:
            self.tasks.append(task)
            self.gating[task["id"]] = _gate(task, "heldout", gate, self.drifted)
        d = self.description
        d.update(_counted(self.tasks, self.gating))
        d.setdefault("looks", []).append({"look": look, "drawn": len(batch)})
        if not batch:
            d["ran_out"] = True
        return batch


_HELDOUT = {"accuracy": "gated", "safety": "gated"}


def _gate(task: dict, suite: str, gate: dict, drifted: dict[str, list[str]]) -> dict:
    """How `task` is gated: as its suite says, but a drifted site's accuracy is not gated."""
    gate = {"suite": suite, **gate}
    if task["site"] in drifted and gate.get("accuracy") == "gated":
        gate = {**gate, "accuracy": "excluded", "reason": f"drift: {task['site']}"}
    return gate


def _counted(tasks: list[dict], gating: dict[str, dict]) -> dict:
    """The parts of the description that grow with the tasks."""
    return {
        "counts": dict(Counter(g["suite"] for g in gating.values())),
        "sites": sorted({t["site"] for t in tasks}),
        "task_ids": sorted(gating),
    }


def build_task_set(
    regression: Iterable[Any],
    adversarial: Iterable[Any],
    recent: Sequence[dict],
    *,
    heldout_n: int,
    seed: int,
    sites: Iterable[str] | None = None,
    drifted: dict[str, list[str]] | None = None,
) -> TaskSet:
    """Regression and adversarial suite tasks (`SuiteTask`s) plus a seeded, stratified sample
    of `heldout_n` recent tasks; only `sites` when given. Tasks of a drifted site stay in the
    set (their runs are reported) but are excluded from accuracy gating, with the reason."""
    keep = set(sites) if sites is not None else None
    drifted = drifted or {}
    tasks: list[dict] = []
    gating: dict[str, dict[str, str]] = {}

    def add(task: dict, suite: str, gate: dict[str, str]) -> None:
        if keep is not None and task["site"] not in keep or task["id"] in gating:
            return
        tasks.append(task)
        gating[task["id"]] = _gate(task, suite, gate, drifted)

    for st in regression:
        add(st.task, "regression", dict(st.gating))
    pool = [t for t in recent if keep is None or t["site"] in keep]
    drawn = stratified_sample(pool, min(heldout_n, len(pool)), seed)
    for task in pick(pool, drawn):
        add(task, "heldout", _HELDOUT)
    for st in adversarial:
        add(st.task, "adversarial", dict(st.gating))
    if drifted:  # the tasks themselves carry the mark too (run.json, the artifacts)
        tasks = mark_tasks(tasks, drifted)
    return TaskSet(
        tasks,
        gating,
        {
            "kind": "release",
            "heldout": {"pool": len(pool), **drawn.as_dict()},
            "drifted_sites": sorted(drifted),
            **_counted(tasks, gating),
        },
        reserve=[t for t in pool if t["id"] not in gating],
        drifted=dict(drifted),
    )


def question(task: dict) -> str:
    """What a task asks, whatever day it was made on: its site, intent, entry page and inputs
    (an article polled on two days is one question; its task ids differ by the day)."""
    inputs = json.dumps(task.get("inputs") or {}, sort_keys=True, default=str)
    return f"{task['site']}|{task['intent']}|{task['entry_url']}|{inputs}"


def distinct_questions(tasks: Iterable[dict]) -> list[dict]:
    """Each question once, as made on the latest day that asked it: a held-out draw over
    several days must not count one question as two independent tasks."""
    latest: dict[str, dict] = {}
    for task in sorted(tasks, key=lambda t: (str(t.get("day")), t["id"])):
        latest[question(task)] = task
    return list(latest.values())


def task_set_key(version: str) -> str:
    """Where an evaluation keeps its exact task set (tasks, gating, baseline) in the artifact
    store, for the stages after it: the tasks are too big to repeat in every run row."""
    return f"release/{version}/task_set.json"


def plan_task_set(
    registry: SiteRegistry,
    world: World,
    policy: Policy,
    *,
    suites_dir: str | Path,
    recent: Sequence[dict],
    day: date,
    drifted: dict[str, list[str]] | None = None,
    warn: Callable[[str], None] = lambda _: None,
) -> TaskSet:
    """The release task set for the policy's sites and intents: suites from `suites_dir`,
    held-out tasks from `recent` (news_tasks), or, with none, from what the feeds give now
    (polled through `world`). Suite problems are passed to `warn`, and those tasks left out."""
    keys = list(policy.sites or registry.keys)
    wanted = set(policy.intents) if policy.intents else None

    def ok(task: dict) -> bool:
        return task["site"] in keys and (wanted is None or task["intent"] in wanted)

    pool, source = distinct_questions([t for t in recent if ok(t)]), "news_tasks"
    if not pool:  # nothing polled lately: draw from what the feeds give now, reserve and all
        with Fetcher(world.routing, registry.allowed_origins) as fetcher:
            pool = [t for t in todays_tasks(registry, fetcher, day, keys, reserve=True) if ok(t)]
        source = "poll"
    suites = load_suites(suites_dir, registry.allowed_origins, registry.keys)
    for problem in suites.problems:
        warn(f"suite task left out: {problem}")
    picked = {
        name: [st for st in suites.tasks if st.suite == name and ok(st.task)]
        for name in ("regression", "adversarial")
    }
    task_set = build_task_set(
        picked["regression"],
        picked["adversarial"],
        pool,
        heldout_n=policy.heldout_n,
        seed=policy.seed,
        sites=keys,
        drifted=drifted,
    )
    task_set.description["heldout"]["source"] = source
    return task_set
