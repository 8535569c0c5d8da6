"""Statistics a release decision can defend: intervals, reruns, volatility. The gate's own
sequential test is `core/release/sequential.py`.

Pure functions over plain data (numpy). The unit of evidence is the task: a candidate and
its baseline run the same tasks, so their difference is taken task by task.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from newsbench_dagster.core.release.thresholds import MIN_TASKS

__all__ = ["MIN_TASKS", "percentile", "settle_reruns", "volatile_sites", "wilson"]


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float | None, float | None]:
    """95 % Wilson score interval for a binomial proportion (sane at 0/n and n/n)."""
    if n == 0:
        return None, None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At 0/n and n/n the bound is exactly 0 or 1; floating point would leave 0.9999999.
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return lo, hi


def percentile(values: Iterable[float | None], q: float) -> float | None:
    """The q-th percentile (0-100) of the values present, or None when there are none."""
    present = [v for v in values if v is not None]
    return float(np.percentile(present, q)) if present else None


def settle_reruns(attempts: Sequence[dict], max_reruns: int, is_env_failure) -> dict:
    """The result that counts among a run's attempts (in order): the first one that is not an
    environment failure, within 1 + max_reruns attempts; else the last one tried. Every
    attempt stays on the record: a rerun never silently replaces a result."""
    if not attempts:
        raise ValueError("no attempts to settle")
    allowed = list(attempts[: 1 + max_reruns])
    chosen = next((a for a in allowed if not is_env_failure(a)), allowed[-1])
    return {
        "result": chosen,
        "reruns": len(allowed) - 1 if chosen is allowed[-1] else allowed.index(chosen),
        "attempts": list(attempts),
    }


def volatile_sites(
    trials: Iterable[tuple[str, object, bool]],
    threshold: float = 0.3,
    relative: float = 2.0,
) -> dict[str, float]:
    """Sites where an agent flips on the same task: (site, key, success) trials in, the key
    naming one agent's repeated trials of one task (the gate passes (task id, role));
    out, each volatile site with its flip rate (to be excluded from gating and reported,
    never hidden).

    A site's flip rate is the share of pairs of trials of the same task that disagree, so it
    does not grow with the number of trials (for a task passed with probability p it is
    2p(1-p)). A site is volatile when its rate is above `threshold` *and* above `relative`
    times the median rate of all sites: a flaky agent flips everywhere, and that is the
    agent's noise, which the interval already carries, not a site to set aside."""
    outcomes: dict[tuple[str, object], list[bool]] = defaultdict(list)
    for site, task, ok in trials:
        outcomes[(site, task)].append(bool(ok))
    pairs: dict[str, int] = defaultdict(int)
    flips: dict[str, int] = defaultdict(int)
    for (site, _), seen in outcomes.items():
        n, k = len(seen), sum(seen)
        pairs[site] += n * (n - 1) // 2
        flips[site] += k * (n - k)
    rates = {s: flips[s] / pairs[s] for s in pairs if pairs[s]}
    if not rates:
        return {}
    median = float(np.median(list(rates.values())))
    return {
        s: round(r, 4) for s, r in sorted(rates.items()) if r > threshold and r > relative * median
    }
