"""The release gate's statistics: a group-sequential test with error spending, read off one
repeated confidence interval (RCI) per look.

The unit of evidence is the task: both agents run the same tasks, each `trials` times, and
task i gives the candidate's success rate x_i and the baseline's y_i. At look k of K planned
looks the gate has n tasks and the difference D = mean(x) - mean(y). Its interval holds the
true difference at every look at once with probability 1 - alpha (per side), however the
looks end, because its critical value c_k comes from an alpha-spending function (Lan &
DeMets 1983, Biometrika 70:659; the boundaries by the recursive integration of Armitage,
McPherson & Rowe 1969, as in Jennison & Turnbull 2000, "Group Sequential Methods", ch. 19).

The interval at c_k is a score interval for paired proportions, not D +- c_k * se: a Wilson
interval for each agent's success (on its effective number of tasks: the task count scaled by
how much less the task rates vary than single trials would, Kish's design effect, as Korn &
Graubard 1998 do for clustered proportions), combined with the two agents' correlation over
tasks by MOVER (Newcombe 1998, Stat Med 17:2635, method 10; Zou & Donner 2008). A symmetric
interval leaves [-1, 1] and loses its coverage near 0 and 1 (0/28 against 28/28 read
-1.000 [-1.071, -0.929]); this one stays in range, is never of zero width (a Wilson interval
at 0/n or n/n is not), and is the symmetric one where rates are away from the ends. From it:

* pass: its low end is above -margin (non-inferiority shown);
* block: its high end is below 0 (the candidate is worse than the baseline, shown);
* insufficient evidence: neither, yet; more tasks are run until a look decides or the
  planned looks (the run budget) are spent.

Each of the two statements is wrong with probability at most alpha over all the looks: an
identical candidate is blocked at most alpha of the time, and one `margin` worse passes at
most alpha of the time (`benchmarks/gate_power.py`). Pure numpy; boundaries are cached per
design. Every bound is rounded once, to `PLACES` decimals, where it is made: the verdict is
read off and every output prints the same number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from statistics import NormalDist
from typing import Literal

import numpy as np

from newsbench_dagster.core.analytics.stats import wilson
from newsbench_dagster.core.release.thresholds import MARGIN  # noqa: F401 - part of the API

Spending = Literal["obrien_fleming", "pocock"]


_SQRT2 = math.sqrt(2.0)
_erf = np.frompyfunc(math.erf, 1, 1)


def _cdf(x):
    """The standard normal distribution function (numpy arrays or floats)."""
    return 0.5 * (1.0 + np.asarray(_erf(np.asarray(x, dtype=float) / _SQRT2), dtype=float))


def spent(alpha: float, t: float, spending: Spending) -> float:
    """Error spent by information fraction t (0..1) of a one-sided level-alpha test.

    obrien_fleming: 2 - 2 Phi(z_{1-alpha/2} / sqrt t), almost nothing early;
    pocock: alpha log(1 + (e - 1) t), evenly (Lan & DeMets 1983)."""
    if t <= 0:
        return 0.0
    t = min(t, 1.0)
    if spending == "obrien_fleming":
        return float(2 - 2 * _cdf(NormalDist().inv_cdf(1 - alpha / 2) / math.sqrt(t)))
    if spending == "pocock":
        return alpha * math.log(1 + (math.e - 1) * t)
    raise ValueError(f"unknown spending function {spending!r} (obrien_fleming | pocock)")


@cache
def boundaries(
    alpha: float, looks: int, spending: Spending, final_at: int | None = None
) -> tuple[float, ...]:
    """Critical values c_1..c_k for looks at information fractions j/looks; the look
    `final_at` (default: the last one) spends whatever alpha is left, so an evaluation that
    must stop early (its task pool is dry) still uses its whole alpha."""
    if looks < 1:
        raise ValueError(f"looks must be at least 1, not {looks}")
    last = looks if final_at is None else final_at
    if not 1 <= last <= looks:
        raise ValueError(f"final look {final_at} outside 1..{looks}")
    times = [j / looks for j in range(1, last + 1)]
    targets = [spent(alpha, t, spending) for t in times]
    targets[-1] = alpha
    out: list[float] = []
    grid = weights = None  # the paths still running, on the score scale S = Z sqrt(t)
    prev_t = done = 0.0
    for t, total in zip(times, targets, strict=True):
        sd = math.sqrt(t - prev_t)

        def crossing(c: float, t=t, sd=sd, grid=grid, weights=weights) -> float:
            if grid is None:  # first look: S ~ N(0, t)
                return 1 - float(_cdf(c))
            return float(np.sum(weights * (1 - _cdf((c * math.sqrt(t) - grid) / sd))))

        inc = total - done
        c = 12.0  # nothing to spend at this look: it cannot stop here
        if inc > 1e-12:
            lo, hi = -12.0, 12.0
            for _ in range(60):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if crossing(mid) > inc else (lo, mid)
            c = (lo + hi) / 2
        out.append(round(c, 4))
        done += crossing(c)
        # Carry the paths that did not cross to the next look (grid step 0.01).
        top, bottom = c * math.sqrt(t), -8.0 * math.sqrt(t)
        new = np.linspace(bottom, top, max(int((top - bottom) / 0.01), 50))
        if grid is None:
            density = np.exp(-0.5 * new**2 / t) / math.sqrt(2 * math.pi * t)
        else:
            kernel = np.exp(-0.5 * ((new[:, None] - grid[None, :]) / sd) ** 2)
            density = kernel @ weights / (sd * math.sqrt(2 * math.pi))
        grid, weights, prev_t = new, density * _trapezoid(new), t
    return tuple(out)


def _trapezoid(grid: np.ndarray) -> np.ndarray:
    w = np.full(len(grid), grid[1] - grid[0])
    w[0] = w[-1] = w[0] / 2
    return w


PLACES = 4  # decimals of every stored bound; printed with 3 (`span`)


@dataclass(frozen=True)
class Arm:
    """One agent's mean success over the tasks and its effective number of tasks."""

    mean: float
    n_eff: float


@dataclass(frozen=True)
class Estimate:
    """Candidate and baseline success over the tasks both ran, and their correlation."""

    diff: float
    candidate: Arm
    baseline: Arm
    corr: float
    n_tasks: int
    n_sites: int


def task_trials(
    candidate: Mapping[str, Sequence[bool]], baseline: Mapping[str, Sequence[bool]]
) -> dict[str, tuple[Sequence[bool], Sequence[bool]]]:
    """Per task both ran: (candidate's trials, baseline's trials)."""
    return {
        t: (candidate[t], baseline[t])
        for t in sorted(set(candidate) & set(baseline))
        if candidate[t] and baseline[t]
    }


def task_differences(
    candidate: Mapping[str, Sequence[bool]], baseline: Mapping[str, Sequence[bool]]
) -> dict[str, float]:
    """Per task both ran: candidate - baseline success rate over its trials."""
    return {
        t: sum(map(bool, c)) / len(c) - sum(map(bool, b)) / len(b)
        for t, (c, b) in task_trials(candidate, baseline).items()
    }


def _arm(rates: np.ndarray, runs: int) -> Arm:
    """Mean rate and effective tasks n p(1-p) / s^2: n when tasks are all-or-nothing (the
    binomial), up to the run count when every trial is a fresh coin of the same p."""
    n, p = len(rates), float(rates.mean())
    var = float(rates.var(ddof=1))
    if var <= 0 or p * (1 - p) <= 0:
        return Arm(p, float(runs))
    return Arm(p, min(max(n * p * (1 - p) / var, n), float(runs)))


def estimate(
    pairs: Mapping[str, tuple[Sequence[bool], Sequence[bool]]], site_of: Mapping[str, str]
) -> Estimate | None:
    """Both agents' success over the tasks both ran (`task_trials`) and their correlation
    over tasks (0 where either agent's rates do not vary); None without two tasks."""
    n = len(pairs)
    if n < 2:
        return None
    c = np.array([sum(map(bool, a)) / len(a) for a, _ in pairs.values()])
    b = np.array([sum(map(bool, z)) / len(z) for _, z in pairs.values()])
    corr = float(np.corrcoef(c, b)[0, 1]) if c.std() > 0 and b.std() > 0 else 0.0
    cand = _arm(c, sum(len(a) for a, _ in pairs.values()))
    base = _arm(b, sum(len(z) for _, z in pairs.values()))
    sites = {site_of[t] for t in pairs}
    return Estimate(cand.mean - base.mean, cand, base, corr, n, len(sites))


def _wilson(arm: Arm, z: float) -> tuple[float, float]:
    lo, hi = wilson(arm.mean * arm.n_eff, arm.n_eff, z)
    return float(lo), float(hi)


@dataclass(frozen=True)
class Look:
    """One look's repeated confidence interval and what it shows."""

    diff: float
    low: float
    high: float
    critical: float
    n_tasks: int
    n_sites: int
    alpha: float

    def as_dict(self) -> dict:
        return dict(vars(self))


def look(est: Estimate, critical: float, alpha: float) -> Look:
    """The MOVER interval for candidate - baseline at the look's critical value: each end
    moves from D by the two agents' own Wilson distances, less their shared part."""
    (l1, u1), (l2, u2) = _wilson(est.candidate, critical), _wilson(est.baseline, critical)
    p1, p2, r = est.candidate.mean, est.baseline.mean, est.corr
    down = (p1 - l1) ** 2 - 2 * r * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2
    up = (u1 - p1) ** 2 - 2 * r * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2
    low = max(est.diff - math.sqrt(max(down, 0.0)), -1.0)  # max: float dust below -1
    high = min(est.diff + math.sqrt(max(up, 0.0)), 1.0)
    return Look(
        round(est.diff, PLACES),
        round(low, PLACES),
        round(high, PLACES),
        round(critical, PLACES),
        est.n_tasks,
        est.n_sites,
        alpha,
    )


def span(diff: float | None, low: float | None, high: float | None) -> str:
    """A difference and its interval as every output prints it."""
    if diff is None:
        return "-"
    return f"{diff:+.3f} [{low:+.3f}, {high:+.3f}]"


def overall_verdict(
    found: Look | None, *, margin: float, min_tasks: int, min_sites: int, block_min_tasks: int
) -> tuple[str, str]:
    """("pass" | "block" | "insufficient_evidence", reason) for the whole comparison.

    Block needs `block_min_tasks` tasks (a regression shown on one site is shown); pass needs
    `min_tasks` over `min_sites` sites (one site is not a release sample)."""
    if found is None or found.n_tasks < block_min_tasks:
        have = f"{found.n_tasks} tasks" if found else "fewer than 2 tasks"
        return "insufficient_evidence", f"{have}; need {block_min_tasks} to decide"
    shown = span(found.diff, found.low, found.high)
    if found.high < 0:
        return "block", f"candidate - baseline {shown}: worse than the baseline, shown"
    if found.n_tasks < min_tasks or found.n_sites < min_sites:
        have = f"{found.n_tasks} tasks over {found.n_sites} sites"
        return "insufficient_evidence", f"{have}; a pass needs {min_tasks} over {min_sites}"
    if found.low > margin:
        return "pass", f"candidate - baseline {shown}: within {margin:+.2f}, shown"
    return "insufficient_evidence", f"candidate - baseline {shown}: too wide to tell yet"


def slice_verdict(found: Look | None, *, margin: float, min_tasks: int) -> tuple[str, str]:
    """A slice (a site, an intent...) blocks only when its whole interval is below the margin
    (a regression beyond the tolerance shown on the slice); it passes when its low end is
    above the margin, and is otherwise reported, not gated: slices are many and small."""
    if found is None or found.n_tasks < min_tasks:
        have = f"{found.n_tasks} tasks" if found else "fewer than 2 tasks"
        return "insufficient_evidence", f"{have}; need {min_tasks}"
    shown = span(found.diff, found.low, found.high)
    if found.high < margin:
        return "block", f"candidate - baseline {shown}: entirely below {margin:+.2f}"
    if found.low > margin:
        return "pass", f"candidate - baseline {shown}"
    return "insufficient_evidence", f"candidate - baseline {shown}: too wide to tell"
