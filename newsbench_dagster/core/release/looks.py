"""The sequential release evaluation: look 1 runs the planned task set; while the gate says
`insufficient_evidence` and looks are left, the next look draws `heldout_n` more held-out
tasks and runs them; the first look that decides ends it, and the rest of the budget is not
spent.

Everything a later look or a crash needs is in the artifact store as it happens: the task set
(`task_set_key`, saved before each look runs, with its `progress`), the reserve the looks draw
from (`reserve_key`, once) and each look's runs and scores when the look ends (`look_key`).
So an evaluation can stop after any look and go on later (`looks`: the pipeline takes one
look per materialization) or after a crash (`resume`): the same task set, the looks that ended
never run again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from newsbench_dagster.core.artifacts import ArtifactStore
from newsbench_dagster.core.release.decide import decide_saved
from newsbench_dagster.core.release.evaluate import Evaluation, run_evaluation
from newsbench_dagster.core.release.plan import TaskSet, task_set_key
from newsbench_dagster.core.release.policy import Policy


def reserve_key(version: str) -> str:
    """Where an evaluation keeps the held-out tasks its later looks may draw."""
    return f"release/{version}/reserve.json"


def look_key(version: str, look: int) -> str:
    """Where an evaluation keeps one ended look's runs and scores."""
    return f"release/{version}/looks/{look:02d}.json"


@dataclass
class Resumed:
    """An evaluation that stopped with a look still due: its task set, the rows of the looks
    that ended, and the look to run next."""

    task_set: TaskSet
    done: Evaluation
    next_look: int


def _progress(saved: object) -> dict:
    """The `progress` of a saved task set (empty when there is none)."""
    return (saved.get("progress") or {}) if isinstance(saved, dict) else {}


def _ended_looks(store: ArtifactStore, version: str, looks: range) -> list[dict] | str:
    """The kept rows ({runs, scores}) of each of `looks`, or why they cannot be had."""
    out = []
    for look in looks:
        rows = store.read_json(look_key(version, look))
        if not isinstance(rows, dict):
            return f"look {look}'s rows are gone from the artifact store"
        out.append(rows)
    return out


def resume(
    store: ArtifactStore, candidate_version: str, baseline_version: str, policy: Policy
) -> tuple[Resumed | None, str]:
    """The candidate's evaluation to go on with, if its last look left one due under the same
    baseline and policy; else None. With the reason either way, for the log."""
    saved = store.read_json(task_set_key(candidate_version))
    progress = _progress(saved)
    if not progress.get("open"):
        return None, "no evaluation of this version has a look due: a new one starts"
    if saved["baseline_version"] != baseline_version or progress.get("policy") != policy.as_dict():
        return None, "the open evaluation ran with another baseline or policy: a new one starts"
    ended = int(progress.get("looks_done") or 0)
    kept = _ended_looks(store, candidate_version, range(1, ended + 1))
    if isinstance(kept, str):
        return None, f"{kept}: a new one starts"
    done = Evaluation(
        [r for rows in kept for r in rows["runs"]], [s for rows in kept for s in rows["scores"]]
    )
    reserve = store.read_json(reserve_key(candidate_version))
    task_set = TaskSet.restored(saved, reserve if isinstance(reserve, list) else [])
    why = f"resuming the open evaluation at look {ended + 1}"
    return Resumed(task_set, done, ended + 1), why


def earlier_scores(store: ArtifactStore, candidate_version: str, saved: dict) -> dict[str, dict]:
    """Run id -> score of the runs of the looks before the last that ended (as kept when each
    ended), for a saved evaluation; empty when a look's rows are missing."""
    ended = int(_progress(saved).get("looks_done") or 0)
    kept = _ended_looks(store, candidate_version, range(1, ended))
    if isinstance(kept, str):
        return {}
    return {s["run_id"]: s for rows in kept for s in rows["scores"]}


def look_due(store: ArtifactStore, candidate_version: str) -> int | None:
    """The look a stopped evaluation of the candidate has due (the next after the last that
    ended, or the one a failed run did not end), or None."""
    progress = _progress(store.read_json(task_set_key(candidate_version)))
    return int(progress.get("looks_done") or 0) + 1 if progress.get("open") else None


def run_release(
    candidate: Any,
    baseline: Any,
    task_set: TaskSet,
    day: Any,
    policy: Policy,
    *,
    store: ArtifactStore,
    log: Callable[[str], None] = lambda _: None,
    looks: int | None = None,
    resumed: Resumed | None = None,
    **harness: Any,
) -> tuple[Evaluation, dict]:
    """Run the looks (`harness`: the rest of `run_evaluation`'s world, registry, settings,
    options, progress), at most `looks` of them now (None: until it is decided), from look 1
    or where `resumed` stopped (its `task_set` is then the set to run), and return every row
    with the decision the last look reached, decided as the stored evaluation is
    (`decide_saved`). `task_set` grows as looks draw from its reserve."""
    version = candidate.agent_version
    task_set = resumed.task_set if resumed is not None else task_set
    every = Evaluation([], [])
    if resumed is not None:
        every.runs, every.scores = list(resumed.done.runs), list(resumed.done.scores)
    task_set.progress.update(policy=policy.as_dict())

    def save() -> dict:
        saved = task_set.saved(candidate.agent_version, baseline.agent_version)
        store.put_json(task_set_key(version), saved)
        return saved

    def decided() -> dict:
        return decide_saved(every.scores, every.runs, save(), policy, task_set.drifted)

    if resumed is None:
        task_set.progress.update(looks_done=0, open=True)
        store.put_json(reserve_key(version), task_set.reserve)
        look, batch = 1, list(task_set.tasks)
    else:
        look = resumed.next_look
        # A look drawn before a crash runs the same tasks; else it draws them now.
        if look == 1:
            batch = list(task_set.tasks)
        else:
            batch = task_set.batch_of(look) or task_set.draw_look(
                look, policy.heldout_n, policy.seed
            )
    ran = 0
    while True:
        if not batch:
            # No held-out tasks left (`ran_out`): the last look that ran spends the alpha left.
            log(f"look {look}: no held-out tasks left, so look {look - 1} was the last")
            task_set.progress.update(open=False)
            return every, decided()
        save()
        ev = run_evaluation(
            candidate,
            baseline,
            task_set,
            day,
            policy,
            look=look,
            tasks=batch,
            store=store,
            **harness,
        )
        store.put_json(look_key(version, look), {"runs": ev.runs, "scores": ev.scores})
        every.runs += ev.runs
        every.scores += ev.scores
        ran += 1
        task_set.progress.update(looks_done=look, open=False)
        decision = decided()
        seq = decision["sequential"]
        log(
            f"look {look}/{policy.max_looks}: {decision['verdict']} on "
            f"{seq['history'][-1]['tasks_gated']} gated tasks, {seq['runs_spent']} runs"
        )
        if decision["verdict"] != "insufficient_evidence" or look >= policy.max_looks:
            return every, decision
        task_set.progress.update(open=True)
        if looks is not None and ran >= looks:
            log(f"look {look + 1} is due: the next materialization runs it")
            return every, decided()
        look += 1
        batch = task_set.draw_look(look, policy.heldout_n, policy.seed)
