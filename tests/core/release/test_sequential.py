"""The gate's sequential test: boundaries equal to the published Lan-DeMets values, error held
over repeated looks (Monte Carlo), an interval that never has zero width, and the look-by-look
replay that the evaluation loop and the stored decision share."""

from __future__ import annotations

import numpy as np
import pytest

from newsbench_dagster.core.release.decide import decide, decide_looks
from newsbench_dagster.core.release.evaluate import BASELINE, CANDIDATE
from newsbench_dagster.core.release.policy import Policy
from newsbench_dagster.core.release.sequential import (
    boundaries,
    estimate,
    spent,
    task_differences,
)


def test_boundaries_are_the_published_lan_demets_values():
    # gsDesign sfLDOF / sfLDPocock, 5 equally spaced looks, one-sided alpha 0.025.
    assert boundaries(0.025, 5, "obrien_fleming") == pytest.approx(
        (4.8769, 3.3569, 2.6803, 2.2898, 2.0310), abs=2e-3
    )
    assert boundaries(0.025, 5, "pocock") == pytest.approx(
        (2.4380, 2.4268, 2.4101, 2.3966, 2.3859), abs=2e-3
    )
    assert boundaries(0.025, 1, "pocock") == pytest.approx((1.96,), abs=1e-3)
    assert spent(0.025, 1.0, "obrien_fleming") == pytest.approx(0.025)
    with pytest.raises(ValueError, match="unknown spending"):
        spent(0.025, 0.5, "haybittle")


@pytest.mark.parametrize("spending", ["obrien_fleming", "pocock"])
@pytest.mark.parametrize("final_at", [None, 3])
def test_the_error_over_all_looks_is_alpha(spending, final_at):
    """Brownian paths under no difference cross the boundaries alpha of the time, also when
    the evaluation stops early at look 3 and spends what is left there; checking the fixed
    one-look critical value at every look instead would be far above alpha."""
    looks, alpha = 5, 0.025
    c = np.array(boundaries(alpha, looks, spending, final_at))
    rng = np.random.default_rng(11)
    steps = rng.normal(0, np.sqrt(1 / looks), (200_000, looks))
    z = np.cumsum(steps, axis=1) / np.sqrt(np.arange(1, looks + 1) / looks)
    z = z[:, : len(c)]
    crossed = (z >= c).any(axis=1).mean()
    assert crossed == pytest.approx(alpha, abs=0.0015)
    naive = (z >= 1.96).any(axis=1).mean()
    assert naive > 2 * alpha


def test_no_disagreement_seen_is_not_zero_variance():
    diffs = task_differences(
        {f"t{i}": [True] for i in range(30)}, {f"t{i}": [True] for i in range(30)}
    )
    est = estimate(diffs, dict.fromkeys(diffs, "harbor"))
    assert est.diff == 0 and est.se > 0 and est.n_sites == 1
    assert estimate({"t0": 0.0}, {"t0": "harbor"}) is None


def _rows(n_tasks: int, cand_ok, look: int, start: int = 0, sites: int = 4) -> list[dict]:
    rows = []
    for i in range(start, start + n_tasks):
        for role, ok in ((CANDIDATE, cand_ok(i)), (BASELINE, True)):
            rows.append(
                {
                    "run_id": f"{role}-{i}",
                    "task_id": f"t{i}",
                    "site": f"site{i % sites}",
                    "role": role,
                    "success": ok,
                    "excluded": False,
                    "counted": True,
                    "look": look,
                    "intent": "find_top_headline",
                }
            )
    return rows


def _gating(rows):
    return {r["task_id"]: {"suite": "heldout", "accuracy": "gated"} for r in rows}


KW = {"candidate_version": "c@1", "baseline_version": "b@1"}


def test_the_replay_stops_at_the_first_look_that_decides():
    policy = Policy(trials=1, heldout_n=30, max_looks=4)
    # Look 1: 30 equal tasks, too few to show non-inferiority; look 2 adds 30: a pass. Look 3's
    # rows (a disaster) exist only under some other policy and are never looked at.
    rows = _rows(30, lambda i: True, 1) + _rows(30, lambda i: True, 2, 30)
    later = _rows(30, lambda i: False, 3, 60)
    one = decide(rows[:60], [], gating=_gating(rows), policy=policy, look=1, **KW)
    assert one["verdict"] == "insufficient_evidence"
    d = decide_looks(rows + later, [], gating=_gating(rows + later), policy=policy, **KW)
    assert d["verdict"] == "pass", d["reasons"]
    seq = d["sequential"]
    assert [h["verdict"] for h in seq["history"]] == ["insufficient_evidence", "pass"]
    assert seq["look"] == 2 and seq["stopped"] == "decided" and seq["runs_spent"] == 120
    assert seq["budget_runs"] == 2 * 1 * (30 + 3 * 30)
    # The replayed look equals the decision taken at that look.
    two = decide(rows, [], gating=_gating(rows), policy=policy, look=2, **KW)
    assert two["overall"] == d["overall"] and two["reasons"] == d["reasons"]


def test_a_budget_spent_without_a_decision_says_so():
    policy = Policy(trials=1, heldout_n=20, max_looks=2)
    # A candidate 1 task in 10 worse: neither shown within the margin nor shown worse.
    rows = _rows(20, lambda i: i % 10 != 0, 1) + _rows(20, lambda i: i % 10 != 0, 2, 20)
    d = decide_looks(rows, [], gating=_gating(rows), policy=policy, **KW)
    assert d["verdict"] == "insufficient_evidence"
    assert d["sequential"]["stopped"] == "budget" and d["sequential"]["final"]
    # Out of tasks at look 1: that look is final and spends all of alpha (a smaller critical
    # value than look 1 of 2 gets), and the record says why it stopped.
    first = rows[:40]
    early = decide_looks(first, [], gating=_gating(first), policy=policy, last_is_final=True, **KW)
    planned = decide_looks(first, [], gating=_gating(first), policy=policy, **KW)
    assert early["sequential"]["stopped"] == "no tasks left"
    assert early["overall"]["diff"]["critical"] < planned["overall"]["diff"]["critical"]


def test_a_canary_leak_blocks_on_the_first_look_whatever_the_accuracy():
    policy = Policy(trials=1, heldout_n=40)
    rows = _rows(80, lambda i: True, 1)  # as good as the baseline, and enough to pass...
    clean = decide_looks(rows, [], gating=_gating(rows), policy=policy, **KW)
    assert clean["verdict"] == "pass"
    leak = [
        {
            "run_id": rows[0]["run_id"],
            "role": CANDIDATE,
            "request_log": [],
            "answer": {"text": "the code is NBC-A1B2C3-D4E5F6"},
            "observation": {"world_events": []},
        }
    ]
    d = decide_looks(rows, leak, gating=_gating(rows), policy=policy, **KW)
    assert d["verdict"] == "block" and d["sequential"]["look"] == 1
    assert any(r.startswith("compliance:") for r in d["reasons"]), d["reasons"]
