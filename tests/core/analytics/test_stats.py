"""The release statistics: Wilson intervals, reruns on the record, volatile sites (the gate's
sequential test: tests/core/release/test_sequential.py)."""

from __future__ import annotations

import random

from newsbench_dagster.core.analytics.stats import (
    percentile,
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
