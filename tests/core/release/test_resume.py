"""What a stopped candidate evaluation leaves in the artifact store is enough to go on with it,
and only when it should go on (issue 50 step 2; the Dagster kill-and-resume test is
tests/defs/test_release_looks.py)."""

from __future__ import annotations

from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.release.looks import look_due, look_key, reserve_key, resume
from newsbench_dagster.core.release.plan import build_task_set, task_set_key
from newsbench_dagster.core.release.policy import Policy

CANDIDATE, BASELINE = "next@0.2.0+aa", "reference@0.1.0+bb"
POLICY = Policy(heldout_n=2, max_looks=4)


def _tasks(n: int) -> list[dict]:
    return [
        {"id": f"t{i}", "site": "harbor", "intent": "find_top_headline", "day": "2026-12-01"}
        for i in range(n)
    ]


def _stopped_after_look_1(store, **progress) -> list[dict]:
    """An evaluation that ended look 1 (its rows stored) and has look 2 due."""
    task_set = build_task_set([], [], _tasks(9), heldout_n=2, seed=0)
    store.put_json(reserve_key(CANDIDATE), task_set.reserve)
    rows = {"runs": [{"run_id": "r1", "look": 1}], "scores": [{"run_id": "r1", "look": 1}]}
    store.put_json(look_key(CANDIDATE, 1), rows)
    task_set.progress.update(
        {"policy": POLICY.as_dict(), "looks_done": 1, "open": True, **progress}
    )
    store.put_json(task_set_key(CANDIDATE), task_set.saved(CANDIDATE, BASELINE))
    return task_set.tasks


def test_an_open_evaluation_resumes_at_its_next_look_with_the_rows_of_the_looks_that_ended(
    tmp_path,
):
    store = LocalArtifactStore(tmp_path)
    assert resume(store, CANDIDATE, BASELINE, POLICY)[0] is None
    assert look_due(store, CANDIDATE) is None
    first = _stopped_after_look_1(store)
    resumed, why = resume(store, CANDIDATE, BASELINE, POLICY)
    assert resumed is not None and "look 2" in why and resumed.next_look == 2
    assert (
        [r["run_id"] for r in resumed.done.runs]
        == ["r1"]
        == [s["run_id"] for s in resumed.done.scores]
    )
    # The same task set, and a reserve without the tasks look 1 ran.
    assert [t["id"] for t in resumed.task_set.tasks] == [t["id"] for t in first]
    assert len(resumed.task_set.reserve) == 9 - 2
    assert not {t["id"] for t in resumed.task_set.reserve} & {t["id"] for t in first}
    assert look_due(store, CANDIDATE) == 2


def test_another_policy_or_baseline_a_lost_look_or_a_decided_evaluation_starts_anew(tmp_path):
    store = LocalArtifactStore(tmp_path)
    _stopped_after_look_1(store)
    other = Policy(heldout_n=3, max_looks=4)
    assert resume(store, CANDIDATE, BASELINE, other)[0] is None
    assert "another baseline or policy" in resume(store, CANDIDATE, BASELINE, other)[1]
    assert resume(store, CANDIDATE, "reference@0.1.1+cc", POLICY)[0] is None
    (tmp_path / look_key(CANDIDATE, 1)).unlink()
    gone, why = resume(store, CANDIDATE, BASELINE, POLICY)
    assert gone is None and "look 1's rows are gone" in why
    _stopped_after_look_1(store, open=False)
    assert resume(store, CANDIDATE, BASELINE, POLICY)[0] is None
    assert look_due(store, CANDIDATE) is None
