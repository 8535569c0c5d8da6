"""The gate's sequential test: boundaries equal to the published Lan-DeMets values, error held
over repeated looks (Monte Carlo), an interval that never has zero width, and the look-by-look
replay that the evaluation loop and the stored decision share."""

from __future__ import annotations

import numpy as np
import pytest

from newsbench_dagster.core.release.decide import decide, decide_looks, render_markdown
from newsbench_dagster.core.release.evaluate import BASELINE, CANDIDATE
from newsbench_dagster.core.release.policy import Policy
from newsbench_dagster.core.release.sequential import (
    Look,
    boundaries,
    estimate,
    look,
    span,
    spent,
    task_trials,
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


def test_no_disagreement_seen_is_not_zero_width():
    """30 tasks on which both agents always succeed have not shown the agents never differ:
    the interval is as wide as 0 failures in 30 allows (Wilson), not zero."""
    pairs = task_trials({f"t{i}": [True] for i in range(30)}, {f"t{i}": [True] for i in range(30)})
    est = estimate(pairs, dict.fromkeys(pairs, "harbor"))
    assert est.diff == 0 and est.n_sites == 1
    found = look(est, 1.96, 0.025)
    assert found.low == pytest.approx(-(1.96**2) / (30 + 1.96**2), abs=1e-4) and found.high > 0
    assert estimate(task_trials({"t0": [True]}, {"t0": [False]}), {"t0": "harbor"}) is None


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
    policy = Policy(trials=1, heldout_n=100, max_looks=4)
    # Look 1: 100 equal tasks, too few to show non-inferiority; look 2 adds 100: a pass. Look
    # 3's rows (a disaster) exist only under some other policy and are never looked at.
    rows = _rows(100, lambda i: True, 1) + _rows(100, lambda i: True, 2, 100)
    later = _rows(100, lambda i: False, 3, 200)
    one = decide(rows[:200], [], gating=_gating(rows), policy=policy, look=1, **KW)
    assert one["verdict"] == "insufficient_evidence"
    d = decide_looks(rows + later, [], gating=_gating(rows + later), policy=policy, **KW)
    assert d["verdict"] == "pass", d["reasons"]
    seq = d["sequential"]
    assert [h["verdict"] for h in seq["history"]] == ["insufficient_evidence", "pass"]
    assert seq["look"] == 2 and seq["stopped"] == "decided" and seq["runs_spent"] == 400
    assert seq["budget_runs"] == 2 * 1 * (100 + 3 * 100)
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
    rows = _rows(160, lambda i: True, 1)  # as good as the baseline, and enough to pass...
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


# -- the interval: in range, covering at the ends, one rounding ------------------------------
def _arms(pc: float, pb: float, n: int, trials: int, rng) -> Look:
    c, b = rng.random((n, trials)) < pc, rng.random((n, trials)) < pb
    pairs = task_trials(
        {f"t{i}": list(c[i]) for i in range(n)}, {f"t{i}": list(b[i]) for i in range(n)}
    )
    return look(estimate(pairs, dict.fromkeys(pairs, "harbor")), 1.96, 0.025)


def test_a_candidate_failing_everything_gets_an_interval_inside_minus_one_to_one():
    """0/28 against 28/28: the symmetric interval read -1.000 [-1.071, -0.929]."""
    policy = Policy(trials=1, heldout_n=28, max_looks=1)
    rows = _rows(28, lambda i: False, 1)
    d = decide(rows, [], gating=_gating(rows), policy=policy, **KW)
    o = d["overall"]["diff"]
    assert o["diff"] == -1 and -1 <= o["low"] <= o["high"] <= 1 and o["high"] < 0
    assert d["verdict"] == "block"
    # One rounding: the reason prints the stored bounds, as the markdown does.
    shown = span(o["diff"], o["low"], o["high"])
    assert shown.startswith("-1.000 [-1.000, ") and shown in d["reasons"][0]
    assert shown in render_markdown(d)


def test_the_interval_stays_in_range_and_covers_where_a_rate_is_zero_or_one():
    """Where either agent's true rate is 0 or 1 the 95 % interval holds the true difference at
    least 94 % of 400 evaluations of 28 tasks (one or two trials each); from 3 % against 97 %
    to 100 % against 100 %, no interval leaves [-1, 1]."""
    rng = np.random.default_rng(3)
    ends = [(0, 1), (1, 1), (0, 0), (0.97, 1), (1, 0.97), (0.03, 0), (0.5, 1), (0, 0.5)]
    for trials in (1, 2):
        for pc, pb in ends:
            found = [_arms(pc, pb, 28, trials, rng) for _ in range(400)]
            assert all(-1 <= f.low <= f.diff <= f.high <= 1 for f in found)
            covered = np.mean([f.low <= pc - pb <= f.high for f in found])
            assert covered >= 0.94, (trials, pc, pb, covered)
        for pc, pb in [(0.03, 0.97), (0.97, 0.03), (0.9, 0.97)]:
            assert all(-1 <= f.low <= f.high <= 1 for f in (_arms(pc, pb, 28, trials, rng),))


def test_away_from_the_ends_the_interval_is_the_symmetric_one():
    """With rates in the middle the score interval is the usual D +- c * se of the paired
    differences (so the gate's power, set by gate_power, is unchanged there)."""
    rng = np.random.default_rng(4)
    n = 400
    c, b = rng.random(n) < 0.6, rng.random(n) < 0.5
    pairs = task_trials({f"t{i}": [c[i]] for i in range(n)}, {f"t{i}": [b[i]] for i in range(n)})
    found = look(estimate(pairs, dict.fromkeys(pairs, "harbor")), 1.96, 0.025)
    d = c.astype(float) - b.astype(float)
    half = 1.96 * d.std(ddof=1) / np.sqrt(n)
    assert found.low == pytest.approx(d.mean() - half, abs=0.004)
    assert found.high == pytest.approx(d.mean() + half, abs=0.004)
