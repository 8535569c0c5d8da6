"""The sequential release evaluation: look 1 runs the planned task set; while the gate says
`insufficient_evidence` and looks are left, the next look draws `heldout_n` more held-out
tasks and runs them; the first look that decides ends it, and the rest of the budget is not
spent. The task set is saved (`task_set_key`) before each look runs, so the stages after it,
and a crash, find every task that ran."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from newsbench_dagster.core.artifacts import ArtifactStore
from newsbench_dagster.core.release.decide import decide_saved
from newsbench_dagster.core.release.evaluate import Evaluation, run_evaluation
from newsbench_dagster.core.release.plan import TaskSet, task_set_key
from newsbench_dagster.core.release.policy import Policy


def run_release(
    candidate: Any,
    baseline: Any,
    task_set: TaskSet,
    day: Any,
    policy: Policy,
    *,
    store: ArtifactStore,
    log: Callable[[str], None] = lambda _: None,
    **harness: Any,
) -> tuple[Evaluation, dict]:
    """Run the looks (`harness`: the rest of `run_evaluation`'s world, registry, settings,
    options, progress) and return every row with the decision the last look reached, decided
    as the stored evaluation is (`decide_saved`). `task_set` grows as looks draw from its
    reserve."""
    every = Evaluation([], [])

    def save() -> dict:
        saved = task_set.saved(candidate.agent_version, baseline.agent_version)
        store.put_json(task_set_key(candidate.agent_version), saved)
        return saved

    saved, batch, look = save(), list(task_set.tasks), 1
    while True:
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
        every.runs += ev.runs
        every.scores += ev.scores
        decision = decide_saved(every.scores, every.runs, saved, policy, task_set.drifted)
        seq = decision["sequential"]
        log(
            f"look {look}/{policy.max_looks}: {decision['verdict']} on "
            f"{seq['history'][-1]['tasks_gated']} gated tasks, {seq['runs_spent']} runs"
        )
        if decision["verdict"] != "insufficient_evidence" or look >= policy.max_looks:
            return every, decision
        look += 1
        batch = task_set.draw_look(look, policy.heldout_n, policy.seed)
        saved = save()
        if not batch:
            # No held-out tasks left (`ran_out`): the last look that ran spends the alpha left.
            log(f"look {look}: no held-out tasks left, so look {look - 1} was the last")
            return every, decide_saved(every.scores, every.runs, saved, policy, task_set.drifted)
