"""The sequential release evaluation: look 1 runs the planned task set; while the gate says
`insufficient_evidence` and looks are left, the next look draws `heldout_n` more held-out
tasks and runs them; the first look that decides ends it, and the rest of the budget is not
spent. Every look's rows are handed to `save` before the next one starts, so a crash keeps
what ran."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from newsbench_dagster.core.release.decide import decide_looks
from newsbench_dagster.core.release.evaluate import Evaluation, run_evaluation
from newsbench_dagster.core.release.plan import TaskSet
from newsbench_dagster.core.release.policy import Policy


def run_release(
    candidate: Any,
    baseline: Any,
    task_set: TaskSet,
    day: Any,
    policy: Policy,
    *,
    save: Callable[[TaskSet, Evaluation], None] = lambda *_: None,
    drifted: dict[str, list[str]] | None = None,
    log: Callable[[str], None] = lambda _: None,
    **harness: Any,
) -> tuple[Evaluation, dict]:
    """Run the looks (`harness`: `run_evaluation`'s world, store, registry, settings, options,
    progress) and return every row with the decision the last look reached. `task_set`
    grows as looks draw from its reserve; `save(task_set, evaluation_so_far)` runs after each
    look."""
    drifted = {s: w for s, w in (drifted or {}).items() if s in task_set.description["sites"]}
    every = Evaluation([], [])

    def decision_now(last_is_final: bool) -> dict:
        return decide_looks(
            every.scores,
            every.runs,
            gating=task_set.gating,
            candidate_version=candidate.agent_version,
            baseline_version=baseline.agent_version,
            policy=policy,
            drifted=drifted,
            last_is_final=last_is_final,
        )

    batch, look = list(task_set.tasks), 1
    while True:
        ev = run_evaluation(
            candidate, baseline, task_set, day, policy, look=look, tasks=batch, **harness
        )
        every.runs += ev.runs
        every.scores += ev.scores
        save(task_set, every)
        decision = decision_now(False)
        seq = decision["sequential"]
        log(
            f"look {look}/{policy.max_looks}: {decision['verdict']} on "
            f"{seq['history'][-1]['tasks_gated']} gated tasks, {seq['runs_spent']} runs"
        )
        if decision["verdict"] != "insufficient_evidence" or look >= policy.max_looks:
            return every, decision
        look += 1
        batch = task_set.draw_look(look, policy.heldout_n, policy.seed)
        if not batch:
            # No held-out tasks left: the last look that ran spends the alpha that is left.
            log(f"look {look}: no held-out tasks left, so look {look - 1} was the last")
            save(task_set, every)
            return every, decision_now(True)
