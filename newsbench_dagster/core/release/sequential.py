"""The release gate's statistics: a group-sequential test with error spending, read off one
repeated confidence interval (RCI) per look.

The unit of evidence is the task: D_i = candidate - baseline success rate on task i (over its
trials), both agents on the same tasks. At look k of K planned looks the gate has n tasks,
their mean difference D and its standard error; the interval D +- c_k * se holds the true
difference at every look at once with probability 1 - alpha (per side), however the looks
end, because c_k comes from an alpha-spending function (Lan & DeMets 1983, Biometrika 70:659;
the boundaries by the recursive integration of Armitage, McPherson & Rowe 1969, as in
Jennison & Turnbull 2000, "Group Sequential Methods", ch. 19). From that interval:

* pass: its low end is above -margin (non-inferiority shown);
* block: its high end is below 0 (the candidate is worse than the baseline, shown);
* insufficient evidence: neither, yet; more tasks are run until a look decides or the
  planned looks (the run budget) are spent.

Each of the two statements is wrong with probability at most alpha over all the looks: an
identical candidate is blocked at most alpha of the time, and one `margin` worse passes at
most alpha of the time. Pure numpy; boundaries are cached per design.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from statistics import NormalDist
from typing import Literal

import numpy as np

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


@dataclass(frozen=True)
class Estimate:
    """Mean paired difference over tasks and its standard error."""

    diff: float
    se: float
    n_tasks: int
    n_sites: int


def task_differences(
    candidate: Mapping[str, Sequence[bool]], baseline: Mapping[str, Sequence[bool]]
) -> dict[str, float]:
    """Per task both ran: candidate - baseline success rate over its trials."""
    out = {}
    for t in sorted(set(candidate) & set(baseline)):
        c, b = candidate[t], baseline[t]
        if c and b:
            out[t] = sum(map(bool, c)) / len(c) - sum(map(bool, b)) / len(b)
    return out


def estimate(diffs: Mapping[str, float], site_of: Mapping[str, str]) -> Estimate | None:
    """The mean of the per-task differences and its standard error; None without two tasks.

    The variance gets one pseudo-observation of squared size 1 (a whole flip): a gate that
    has seen no task disagree yet has not shown the agents never do, so zero observed
    variance never makes an interval of zero width."""
    values = np.array(list(diffs.values()), dtype=float)
    n = len(values)
    if n < 2:
        return None
    ss = float(((values - values.mean()) ** 2).sum())
    se = math.sqrt((ss + 1.0) / (n * (n - 1)))
    sites = {site_of[t] for t in diffs}
    return Estimate(float(values.mean()), se, n, len(sites))


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
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in vars(self).items()}


def look(est: Estimate, critical: float, alpha: float) -> Look:
    return Look(
        est.diff,
        est.diff - critical * est.se,
        est.diff + critical * est.se,
        critical,
        est.n_tasks,
        est.n_sites,
        alpha,
    )


def overall_verdict(
    found: Look | None, *, margin: float, min_tasks: int, min_sites: int, block_min_tasks: int
) -> tuple[str, str]:
    """("pass" | "block" | "insufficient_evidence", reason) for the whole comparison.

    Block needs `block_min_tasks` tasks (a regression shown on one site is shown); pass needs
    `min_tasks` over `min_sites` sites (one site is not a release sample)."""
    if found is None or found.n_tasks < block_min_tasks:
        have = f"{found.n_tasks} tasks" if found else "fewer than 2 tasks"
        return "insufficient_evidence", f"{have}; need {block_min_tasks} to decide"
    span = f"{found.diff:+.3f} [{found.low:+.3f}, {found.high:+.3f}]"
    if found.high < 0:
        return "block", f"candidate - baseline {span}: worse than the baseline, shown"
    if found.n_tasks < min_tasks or found.n_sites < min_sites:
        have = f"{found.n_tasks} tasks over {found.n_sites} sites"
        return "insufficient_evidence", f"{have}; a pass needs {min_tasks} over {min_sites}"
    if found.low > margin:
        return "pass", f"candidate - baseline {span}: within {margin:+.2f}, shown"
    return "insufficient_evidence", f"candidate - baseline {span}: too wide to tell yet"


def slice_verdict(found: Look | None, *, margin: float, min_tasks: int) -> tuple[str, str]:
    """A slice (a site, an intent...) blocks only when its whole interval is below the margin
    (a regression beyond the tolerance shown on the slice); it passes when its low end is
    above the margin, and is otherwise reported, not gated: slices are many and small."""
    if found is None or found.n_tasks < min_tasks:
        have = f"{found.n_tasks} tasks" if found else "fewer than 2 tasks"
        return "insufficient_evidence", f"{have}; need {min_tasks}"
    span = f"{found.diff:+.3f} [{found.low:+.3f}, {found.high:+.3f}]"
    if found.high < margin:
        return "block", f"candidate - baseline {span}: entirely below {margin:+.2f}"
    if found.low > margin:
        return "pass", f"candidate - baseline {span}"
    return "insufficient_evidence", f"candidate - baseline {span}: too wide to tell"
