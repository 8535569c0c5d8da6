"""The release statistics: paired, site-clustered bootstrap intervals, the regression verdict
(with insufficient evidence never a pass), reruns on the record, volatile sites."""

from __future__ import annotations

import random

import pytest

from newsbench_dagster.core.analytics.stats import (
    paired_difference,
    percentile,
    regression_verdict,
    settle_reruns,
    volatile_sites,
    wilson,
)
from newsbench_dagster.core.scoring.failures import is_environment_failure


def trials(rates: dict[str, float], n: int = 4, seed: int = 0) -> dict[str, list[bool]]:
    rng = random.Random(seed)
    return {t: [rng.random() < p for _ in range(n)] for t, p in rates.items()}


SITES = [f"s{i}" for i in range(8)]
TASKS = {f"t{i:03d}": SITES[i % len(SITES)] for i in range(80)}


def test_wilson_matches_the_textbook_interval():
    low, high = wilson(8, 10)
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)
    assert wilson(0, 0) == (None, None)


def test_the_same_agent_against_itself_is_a_difference_of_zero():
    same = trials(dict.fromkeys(TASKS, 0.8))
    result = paired_difference(same, same, TASKS, seed=1)
    assert result.diff == 0 and result.low == 0 and result.high == 0
    assert (result.n_tasks, result.n_clusters) == (80, 8)
    assert regression_verdict(result)[0] == "pass"


def test_a_clearly_worse_candidate_is_blocked_and_a_better_one_passes():
    base = trials(dict.fromkeys(TASKS, 0.9), seed=1)
    worse = trials(dict.fromkeys(TASKS, 0.6), seed=2)
    result = paired_difference(worse, base, TASKS, seed=3)
    assert result.high < 0
    verdict, reason = regression_verdict(result)
    assert verdict == "block" and "lower bound" in reason
    better = paired_difference(base, worse, TASKS, seed=3)
    assert better.low > 0 and regression_verdict(better)[0] == "pass"


def test_the_interval_is_reproducible_and_clustering_widens_it():
    base = trials(dict.fromkeys(TASKS, 0.8), seed=4)
    # The candidate breaks on two whole sites (site drift), not on scattered tasks.
    cand = {t: (v if TASKS[t] not in ("s0", "s1") else [False] * 4) for t, v in base.items()}
    a = paired_difference(cand, base, TASKS, seed=7)
    assert a == paired_difference(cand, base, TASKS, seed=7)
    each_task_its_own_site = {t: t for t in TASKS}
    flat = paired_difference(cand, base, each_task_its_own_site, seed=7)
    assert a.diff == flat.diff
    assert (a.high - a.low) > (flat.high - flat.low)


def test_too_few_tasks_or_sites_is_insufficient_evidence_not_a_pass():
    few = {t: s for t, s in list(TASKS.items())[:10]}
    same = trials(dict.fromkeys(few, 0.9))
    assert regression_verdict(paired_difference(same, same, few))[0] == "insufficient_evidence"
    one_site = dict.fromkeys(TASKS, "s0")
    same = trials(dict.fromkeys(TASKS, 0.9))
    verdict, reason = regression_verdict(paired_difference(same, same, one_site))
    assert verdict == "insufficient_evidence" and "1 sites" in reason
    assert regression_verdict(None)[0] == "insufficient_evidence"
    with pytest.raises(ValueError, match="no cluster"):
        paired_difference(same, same, {})


def test_reruns_settle_on_the_first_real_result_and_keep_every_attempt():
    crash = {"failure_class": "browser_crash"}
    fail = {"failure_class": "wrong_target"}
    settled = settle_reruns(
        [crash, fail, {"failure_class": "success"}],
        2,
        lambda a: is_environment_failure(a["failure_class"]),
    )
    assert settled["result"] is fail and settled["reruns"] == 1
    assert len(settled["attempts"]) == 3
    # Out of reruns: the environment failure stands (and is excluded downstream).
    stuck = settle_reruns([crash, crash, crash], 1, lambda a: True)
    assert stuck["result"] is crash and stuck["reruns"] == 1


def test_volatile_sites_are_named_with_their_flip_rate():
    runs = [
        (site, f"{site}{i}", True) for site in ("a", "b", "c") for i in range(10) for _ in "xyz"
    ]
    runs += [("shaky", f"s{i}", bool(k % 2)) for i in range(10) for k in range(2)]
    assert volatile_sites(runs) == {"shaky": 1.0}
    assert volatile_sites(runs, threshold=1.0) == {}


def test_a_flaky_agent_is_not_a_volatile_web():
    # Every site flips alike (p = 0.8, 4 trials): the agent's noise, not a site to drop...
    rng = random.Random(3)
    runs = [(s, f"{s}{i}", rng.random() < 0.8) for s in SITES for i in range(30) for _ in "wxyz"]
    assert volatile_sites(runs) == {}
    # ...while one site flipping far more than the others is set aside.
    runs += [("rotating", f"r{i}", bool(k % 2)) for i in range(30) for k in range(4)]
    assert list(volatile_sites(runs)) == ["rotating"]


def test_flip_rate_does_not_grow_with_trials():
    two = [("s", f"t{i}", k == 0) for i in range(10) for k in range(2)]  # 1 of 1 pairs differ
    four = [("s", f"t{i}", k < 2) for i in range(10) for k in range(4)]  # 4 of 6 pairs differ
    assert volatile_sites(two, relative=0) == {"s": 1.0}
    assert volatile_sites(four, relative=0) == {"s": round(4 / 6, 4)}


def test_percentiles_skip_missing_values():
    assert percentile([1.0, None, 3.0, 2.0], 50) == 2.0
    assert percentile([None], 95) is None


def test_stratified_bootstrap_resamples_tasks_within_each_site():
    from newsbench_dagster.core.analytics.stats import paired_difference

    # One site: resampling whole sites cannot vary anything; resampling its tasks can.
    cand = {f"t{i}": [i % 2 == 0] for i in range(20)}
    base = {f"t{i}": [True] for i in range(20)}
    sites = dict.fromkeys(cand, "harbor")
    clustered = paired_difference(cand, base, sites, scheme="cluster")
    stratified = paired_difference(cand, base, sites, scheme="stratified")
    assert clustered.low == clustered.high == -0.5
    assert stratified.low < -0.5 < stratified.high
    assert stratified.diff == clustered.diff == -0.5
    with pytest.raises(ValueError, match="unknown bootstrap scheme"):
        paired_difference(cand, base, sites, scheme="jackknife")
