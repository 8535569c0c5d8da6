"""The gate's budget fits in the news: at the release policy's defaults, 12 looks of 100
held-out tasks are drawn from one poll of the embedded newsroom and never run dry (issue 50
step 1). Before the reserve, the day's 102 tasks ran out after the first look."""

from __future__ import annotations

from datetime import UTC, datetime

from benchmarks.common import frozen_newsroom
from newsbench_dagster.core.release.plan import plan_task_set
from newsbench_dagster.core.release.policy import Policy
from newsbench_dagster.paths import SUITES_DIR

AT = datetime(2026, 11, 30, 12, tzinfo=UTC)


def test_twelve_looks_of_a_hundred_held_out_tasks_at_defaults(registry):
    policy = Policy()
    with frozen_newsroom(AT) as (_, world):
        task_set = plan_task_set(
            registry, world, policy, suites_dir=SUITES_DIR, recent=[], day=AT.date()
        )
    assert task_set.description["heldout"]["source"] == "poll"
    heldout = [i for i, g in task_set.gating.items() if g["suite"] == "heldout"]
    assert len(heldout) == policy.heldout_n
    for look in range(2, policy.max_looks + 1):
        batch = task_set.draw_look(look, policy.heldout_n, policy.seed)
        assert len(batch) == policy.heldout_n, f"look {look} drew {len(batch)}"
    saved = task_set.saved("candidate@1", "baseline@1")
    assert not saved["ran_out"]
    drawn = [i for i, g in task_set.gating.items() if g["suite"] == "heldout"]
    assert len(drawn) == len(set(drawn)) == policy.max_looks * policy.heldout_n
    # Every site and every intent is in the draws, not only the article questions.
    tasks = {t["id"]: t for t in task_set.tasks}
    assert {tasks[i]["site"] for i in drawn} == set(registry.keys)
    assert len({tasks[i]["intent"] for i in drawn}) >= 12
