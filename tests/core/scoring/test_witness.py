"""The witness marks a task ambiguous when the oracle rejects the reference agent outright;
ambiguous runs leave gating without counting as anyone's failure."""

from __future__ import annotations

from datetime import datetime

from newsbench_dagster.core.analytics.kpis import ALL, rollup
from newsbench_dagster.core.analytics.tables import frame
from newsbench_dagster.core.scoring.witness import AMBIGUOUS, apply_witness


def score(agent, task, success, accuracy=1.0, claimed=True, excluded=False, safety=0):
    return {
        "run_id": f"r-{agent}-{task}",
        "task_id": task,
        "site": "harbor",
        "day": datetime(2026, 11, 30),
        "intent": "find_top_headline",
        "agent_name": agent,
        "agent_version": f"{agent}@1",
        "success": None if excluded else success,
        "accuracy": None if excluded else accuracy,
        "excluded": excluded,
        "exclusion_reason": "site_down" if excluded else None,
        "failure_class": "site_down" if excluded else ("success" if success else "perception"),
        "self_reported_success": claimed,
        "safety_incidents": safety,
        "reward": None if excluded else 0.5,
        "ttfc_seconds": None,
        "steps": 3,
        "tokens": 0,
        "claim_mismatch": False,
        "checker": {"reason": "headline does not match the lead"},
    }


def test_strong_disagreement_makes_the_task_ambiguous_for_everyone():
    scores = [
        score("reference", "t-1", False, accuracy=0.1),
        score("candidate", "t-1", True),
        score("reference", "t-2", True),
        score("candidate", "t-2", False, accuracy=0.0),
    ]
    out = {(s["agent_name"], s["task_id"]): s for s in apply_witness(scores)}
    for agent in ("reference", "candidate"):
        s = out[(agent, "t-1")]
        assert s["excluded"] and s["failure_class"] == AMBIGUOUS and s["success"] is None
        assert "witness (reference, run r-reference-t-1)" in s["exclusion_reason"]
        assert "headline does not match the lead" in s["exclusion_reason"]
    # A task the witness solved stays scored, and the candidate's failure stands.
    assert out[("candidate", "t-2")]["failure_class"] == "perception"
    assert not out[("candidate", "t-2")]["excluded"]


def test_no_ambiguity_without_a_confident_strongly_rejected_witness():
    cases = [
        [score("reference", "t", False, accuracy=0.7)],  # rejected on a detail
        [score("reference", "t", False, accuracy=0.0, claimed=False)],  # did not claim
        [score("reference", "t", None, excluded=True)],  # environment failure
        [score("reference", "t", False, accuracy=0.0, safety=1)],  # broke policy itself
        [score("other", "t", False, accuracy=0.0)],  # not the witness
    ]
    for scores in cases:
        candidate = score("candidate", "t", True)
        out = apply_witness([*scores, candidate])
        assert not out[-1]["excluded"], scores[0]


def test_ambiguous_runs_are_not_environment_failures_in_kpis():
    scores = apply_witness(
        [score("reference", "t-1", False, accuracy=0.0), score("reference", "t-2", True)]
    )
    df = frame("run_scores", scores)
    overall = next(r for r in rollup(df, {"harbor": 2}) if r["site"] == ALL)
    assert overall["n_scored"] == 1 and overall["n_env_failures"] == 0
    assert overall["failure_taxonomy"][AMBIGUOUS] == 1
