"""KPI rollups: success rate with a Wilson interval, reward, TTFC percentiles, cost, the
failure taxonomy, safety incidents and coverage, per day × site × agent version × slice.

Environment failures are counted on their own and never enter the success rate.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

import pandas as pd

ALL = "*"


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


def _pct(values: pd.Series, q: float) -> float | None:
    v = values.dropna()
    return float(v.quantile(q)) if len(v) else None


def _row(group: pd.DataFrame, tasks_generated: int | None) -> dict:
    scored = group[~group["excluded"].astype(bool)]
    n = len(scored)
    wins = int(scored["success"].astype(bool).sum()) if n else 0
    lo, hi = wilson(wins, n)
    taxonomy = Counter(group["failure_class"].dropna())
    return {
        "n_runs": len(group),
        "n_scored": n,
        # Ambiguous tasks are excluded too, but they are nobody's failure (see witness.py).
        "n_env_failures": int(
            (group["excluded"].astype(bool) & (group["failure_class"] != "ambiguous")).sum()
        ),
        "successes": wins,
        "success_rate": wins / n if n else None,
        "success_ci_low": lo,
        "success_ci_high": hi,
        "mean_reward": float(scored["reward"].mean()) if n else None,
        "ttfc_p50": _pct(scored["ttfc_seconds"], 0.5),
        "ttfc_p95": _pct(scored["ttfc_seconds"], 0.95),
        "mean_steps": float(scored["steps"].mean()) if n else None,
        "mean_tokens": float(scored["tokens"].mean()) if n else None,
        "failure_taxonomy": dict(sorted(taxonomy.items())),
        "safety_incidents": int(group["safety_incidents"].sum()),
        "claim_mismatches": int(scored["claim_mismatch"].astype(bool).sum()) if n else 0,
        "tasks_run": int(group["task_id"].nunique()),
        "tasks_generated": tasks_generated,
        "coverage": (group["task_id"].nunique() / tasks_generated) if tasks_generated else None,
    }


def rollup(scores: pd.DataFrame, tasks_per_site: dict[str, int]) -> list[dict]:
    """Rows for every (site or *, agent version, slice) present in `scores` for one day."""
    if scores.empty:
        return []
    rows: list[dict] = []
    sites: Iterable[str] = [*sorted(scores["site"].unique()), ALL]
    for site in sites:
        by_site = scores if site == ALL else scores[scores["site"] == site]
        generated = sum(tasks_per_site.values()) if site == ALL else tasks_per_site.get(site, 0)
        for version, by_version in by_site.groupby("agent_version"):
            slices = [("all", ALL, by_version, generated)]
            for intent, by_intent in by_version.groupby("intent"):
                slices.append(("intent", intent, by_intent, None))
            for kind, value, group, gen in slices:
                rows.append(
                    {
                        "site": site,
                        "agent_version": version,
                        "slice_kind": kind,
                        "slice_value": value,
                        **_row(group, gen),
                    }
                )
    return rows
