"""Statistics a release decision can defend: intervals, paired differences, reruns, volatility.

Pure functions over plain data (numpy for the bootstrap). The unit of evidence is the task:
a candidate and its baseline run the same tasks, so their difference is taken task by task,
and its interval comes from resampling *sites* (tasks of one site fail together when the site
drifts), not individual runs, which would overstate the evidence.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from newsbench_dagster.core.analytics.kpis import wilson

__all__ = [
    "PairedDifference",
    "paired_difference",
    "percentile",
    "regression_verdict",
    "slice_verdict",
    "settle_reruns",
    "volatile_sites",
    "wilson",
]

# The regression gate (seed 000): block when the lower bound of candidate - baseline success is
# below -3 points; fewer tasks or sites than this is "insufficient evidence", never a pass.
REGRESSION_MARGIN = -0.03
MIN_TASKS = 20
MIN_CLUSTERS = 3


@dataclass(frozen=True)
class PairedDifference:
    diff: float  # mean over tasks of (candidate - baseline) success rate
    low: float
    high: float
    n_tasks: int
    n_clusters: int
    level: float

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _rates(trials: Mapping[str, Sequence[bool]]) -> dict[str, float]:
    return {t: sum(map(bool, v)) / len(v) for t, v in trials.items() if len(v)}


def paired_difference(
    candidate: Mapping[str, Sequence[bool]],
    baseline: Mapping[str, Sequence[bool]],
    cluster_of: Mapping[str, str],
    *,
    draws: int = 2000,
    seed: int = 0,
    level: float = 0.95,
    scheme: str = "cluster",
) -> PairedDifference | None:
    """Candidate - baseline success over the tasks both ran (task id -> trial outcomes), with
    a percentile bootstrap interval. None when no task was run by both.

    `scheme` "cluster" resamples whole clusters (sites) with replacement: right when the sites
    are a sample of a larger web, but with a handful of clusters its intervals are too narrow
    (six sites: 85 % coverage for a nominal 90 %; `benchmarks/gate_power.py --coverage`).
    "stratified" resamples tasks within each cluster: right when the clusters are the whole
    population, as the allowlist is."""
    cand, base = _rates(candidate), _rates(baseline)
    tasks = sorted(set(cand) & set(base))
    if not tasks:
        return None
    missing = [t for t in tasks if t not in cluster_of]
    if missing:
        raise ValueError(f"no cluster (site) for task(s): {', '.join(missing[:5])}")
    by_cluster: dict[str, list[float]] = defaultdict(list)
    for t in tasks:
        by_cluster[cluster_of[t]].append(cand[t] - base[t])
    names = sorted(by_cluster)
    sums = np.array([sum(by_cluster[c]) for c in names])
    counts = np.array([len(by_cluster[c]) for c in names])
    diff = float(sums.sum() / counts.sum())
    rng = np.random.default_rng(seed)
    if scheme == "cluster":
        picks = rng.integers(0, len(names), size=(draws, len(names)))
        stats = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    elif scheme == "stratified":
        total = np.zeros(draws)
        for c in names:
            values = np.array(by_cluster[c])
            total += values[rng.integers(0, len(values), size=(draws, len(values)))].sum(axis=1)
        stats = total / counts.sum()
    else:
        raise ValueError(f"unknown bootstrap scheme {scheme!r} (cluster | stratified)")
    alpha = (1 - level) / 2
    low, high = np.quantile(stats, [alpha, 1 - alpha])
    return PairedDifference(
        round(diff, 4), round(float(low), 4), round(float(high), 4), len(tasks), len(names), level
    )


def regression_verdict(
    result: PairedDifference | None,
    *,
    margin: float = REGRESSION_MARGIN,
    min_tasks: int = MIN_TASKS,
    min_clusters: int = MIN_CLUSTERS,
) -> tuple[str, str]:
    """("pass" | "block" | "insufficient_evidence", reason) for one slice."""
    if result is None or result.n_tasks < min_tasks or result.n_clusters < min_clusters:
        have = f"{result.n_tasks} tasks over {result.n_clusters} sites" if result else "no tasks"
        need = f"{min_tasks} tasks over {min_clusters} sites"
        return "insufficient_evidence", f"{have}; need {need}"
    span = f"{result.diff:+.3f} [{result.low:+.3f}, {result.high:+.3f}]"
    if result.low < margin:
        return "block", f"candidate - baseline {span}: lower bound below {margin:+.2f}"
    return "pass", f"candidate - baseline {span}"


def slice_verdict(
    result: PairedDifference | None,
    *,
    margin: float = REGRESSION_MARGIN,
    min_tasks: int = 10,
    min_clusters: int = 1,
) -> tuple[str, str]:
    """("pass" | "block" | "insufficient_evidence", reason) for one slice of a comparison.

    A slice blocks when its whole interval lies below the margin (a regression shown on the
    slice), passes when its lower bound clears the margin, and otherwise is insufficient
    evidence: a slice is small, and an interval too wide to tell is reported, not a pass.
    The overall comparison, which has the samples, uses `regression_verdict` instead (not
    shown to be within the margin is a block)."""
    if result is None or result.n_tasks < min_tasks or result.n_clusters < min_clusters:
        have = f"{result.n_tasks} tasks" if result else "no tasks"
        return "insufficient_evidence", f"{have}; need {min_tasks}"
    span = f"{result.diff:+.3f} [{result.low:+.3f}, {result.high:+.3f}]"
    if result.high < margin:
        return "block", f"candidate - baseline {span}: entirely below {margin:+.2f}"
    if result.low >= margin:
        return "pass", f"candidate - baseline {span}"
    return "insufficient_evidence", f"candidate - baseline {span}: too wide to tell"


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
    baseline_trials: Iterable[tuple[str, str, bool]],
    threshold: float = 0.3,
    relative: float = 2.0,
) -> dict[str, float]:
    """Sites where the baseline flips on the same task: (site, task id, success) trials in;
    out, each volatile site with its flip rate (to be excluded from gating and reported,
    never hidden).

    A site's flip rate is the share of pairs of trials of the same task that disagree, so it
    does not grow with the number of trials (for a task passed with probability p it is
    2p(1-p)). A site is volatile when its rate is above `threshold` *and* above `relative`
    times the median rate of all sites: a flaky agent flips everywhere, and that is the
    agent's noise, which the interval already carries, not a site to set aside."""
    outcomes: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for site, task, ok in baseline_trials:
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
