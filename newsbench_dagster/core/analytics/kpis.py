"""KPI rollups: success rate with a Wilson interval, reward and its components, TTFC
percentiles, cost (per run and per success), the tool-call mix, the failure taxonomy, safety
incidents, PII flags, page performance (load time, JS and network errors), drift sensitivity
and coverage, per day × site × agent version × slice (all, intent, device, geo, network,
locale, risk tier).

Environment failures are counted on their own and never enter the success rate, nor do void
runs (the page showed no answer at the run's instant: nobody's failure, `n_void`) or
ambiguous ones (the page named two answers and the run's agreed with one: nobody's failure,
under `ambiguous` in the failure taxonomy); the page
measures (load time, JS and network errors) count every run, since they measure the pages.
Rows written before a column existed read as NULL: a missing column or value counts as
nothing observed, never as zero.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

import pandas as pd

from newsbench_dagster.core.analytics.stats import wilson
from newsbench_dagster.core.scoring.failures import NOBODYS, VOID

ALL = "*"
# The run_scores columns rows are sliced by, besides `intent` (one row per value present).
SLICE_COLUMNS = ("device", "geo", "network", "locale", "risk_tier")


def _pct(values: pd.Series, q: float) -> float | None:
    v = values.dropna()
    return float(v.quantile(q)) if len(v) else None


def _col(group: pd.DataFrame, col: str) -> pd.Series:
    """A column as floats with NaN for missing values (all NaN when older rows lack it)."""
    if col not in group:
        return pd.Series(float("nan"), index=group.index, dtype="float64")
    return pd.to_numeric(group[col], errors="coerce").astype("float64")


def _mean(values: pd.Series) -> float | None:
    v = values.dropna()
    return float(v.mean()) if len(v) else None


def _calls(value: Any) -> dict[str, float]:
    """A `tool_calls` cell ({tool: calls}; JSON text from the warehouse) as a dict."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): float(v) for k, v in value.items() if isinstance(v, int | float) and v > 0}


def _tool_mix(group: pd.DataFrame) -> dict[str, float] | None:
    """Each tool's share of all tool calls in the group (None when no call is recorded)."""
    if "tool_calls" not in group:
        return None
    total: Counter[str] = Counter()
    for cell in group["tool_calls"]:
        total.update(_calls(cell))
    calls = sum(total.values())
    if not calls:
        return None
    return {tool: round(c / calls, 4) for tool, c in sorted(total.items())}


def _error_rate(group: pd.DataFrame, col: str) -> float | None:
    """Share of the runs with at least one error, over the runs where it was recorded."""
    v = _col(group, col).dropna()
    return float((v >= 1).mean()) if len(v) else None


def _row(group: pd.DataFrame, tasks_generated: int | None, drift: float | None = None) -> dict:
    scored = group[~group["excluded"].astype(bool)]
    n = len(scored)
    won = scored["success"].astype("boolean").fillna(False).astype(bool)
    wins = int(won.sum()) if n else 0
    pii = _col(scored, "pii_flags").dropna()
    lo, hi = wilson(wins, n)
    taxonomy = Counter(group["failure_class"].dropna())
    return {
        "n_runs": len(group),
        "n_scored": n,
        # Ambiguous tasks (see witness.py) and void runs (no answer at the run's instant) are
        # excluded too, but they are nobody's failure.
        "n_env_failures": int(
            (group["excluded"].astype(bool) & ~group["failure_class"].isin(NOBODYS)).sum()
        ),
        "n_void": int((group["excluded"].astype(bool) & (group["failure_class"] == VOID)).sum()),
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
        "mean_accuracy": _mean(_col(scored, "accuracy")),
        "mean_timeliness": _mean(_col(scored, "timeliness")),
        "mean_efficiency": _mean(_col(scored, "efficiency")),
        # Cost per success: what a successful run spent (None without a success).
        "steps_per_success": _mean(_col(scored, "steps")[won]),
        "tokens_per_success": _mean(_col(scored, "tokens")[won]),
        "tool_call_mix": _tool_mix(group),
        "drift_sensitivity": drift,
        "page_load_p50_ms": _pct(_col(group, "page_load_ms"), 0.5),
        "js_error_rate": _error_rate(group, "js_errors"),
        "network_error_rate": _error_rate(group, "network_errors"),
        "pii_flag_rate": float((pii > 0).mean()) if len(pii) else None,
    }


def rollup(
    scores: pd.DataFrame, tasks_per_site: dict[str, int], drift: dict[str, float] | None = None
) -> list[dict]:
    """Rows for every (site or *, agent version, slice) present in `scores` for one day.

    `drift` maps a site to its baseline's success delta after a template change (the
    `site_drift` stage); it is the site's `drift_sensitivity`, and `*` gets the mean over the
    sites in `drift` (None for a site missing from it, and everywhere without it)."""
    if scores.empty:
        return []
    drift = {k: float(v) for k, v in (drift or {}).items() if v is not None and not pd.isna(v)}
    overall_drift = sum(drift.values()) / len(drift) if drift else None
    rows: list[dict] = []
    sites: Iterable[str] = [*sorted(scores["site"].unique()), ALL]
    for site in sites:
        by_site = scores if site == ALL else scores[scores["site"] == site]
        generated = sum(tasks_per_site.values()) if site == ALL else tasks_per_site.get(site, 0)
        sensitivity = overall_drift if site == ALL else drift.get(site)
        for version, by_version in by_site.groupby("agent_version"):
            slices = [("all", ALL, by_version, generated)]
            for kind in ("intent", *SLICE_COLUMNS):
                if kind not in by_version:
                    continue  # rows written before the column existed
                for value, group in by_version.groupby(kind, dropna=True, sort=True):
                    slices.append((kind, str(value), group, None))
            for kind, value, group, gen in slices:
                rows.append(
                    {
                        "site": site,
                        "agent_version": version,
                        "slice_kind": kind,
                        "slice_value": value,
                        **_row(group, gen, sensitivity),
                    }
                )
    return rows


def interval_strip(
    rate: float | None, low: float | None, high: float | None, width: int = 25
) -> str:
    """A rate and its interval drawn on a 0..1 scale in text, for Markdown metadata:
    `·····[===●==]·····` (the interval in brackets, the rate as ●)."""
    if rate is None or low is None or high is None:
        return "·" * width
    cells = ["·"] * width

    def at(x: float) -> int:
        return min(width - 1, max(0, round(x * (width - 1))))

    lo, hi, mid = at(low), at(high), at(rate)
    for i in range(lo, hi + 1):
        cells[i] = "="
    cells[lo], cells[hi] = "[", "]"
    cells[mid] = "●"
    return "".join(cells)


def success_over_days(rows: Iterable[dict], site: str = ALL) -> str:
    """Markdown: one line per day of a site's (default: all sites') overall success, with
    its 95 % interval drawn, one block per agent version."""
    picked = sorted(
        (r for r in rows if r["site"] == site and r["slice_kind"] == "all"),
        key=lambda r: (r["agent_version"], r["day"]),
    )
    lines = ["| agent | day | success [95 % CI] | 0 ... 1 |", "|---|---|---|---|"]
    for r in picked:
        rate, lo, hi = r.get("success_rate"), r.get("success_ci_low"), r.get("success_ci_high")
        shown = "-" if rate is None else f"{rate:.2f} [{lo:.2f}, {hi:.2f}]"
        day = str(r["day"])[:10]
        lines.append(
            f"| {r['agent_version']} | {day} | {shown} | `{interval_strip(rate, lo, hi)}` |"
        )
    return "\n".join(lines)


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None or pd.isna(value) else format(value, spec)


def overall_table(rows: Iterable[dict]) -> str:
    """Markdown: per site and agent version, scored runs, success, environment failures, void
    runs and mean reward (the `all` slice)."""
    lines = [
        "| site | agent | scored | success | env failures | void | reward |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['site']} | {r['agent_version']} | {r['n_scored']} | "
        f"{_fmt(r['success_rate'], '.2f')} | {r['n_env_failures']} | {r['n_void']} | "
        f"{_fmt(r['mean_reward'], '.3f')} |"
        for r in rows
        if r["slice_kind"] == "all"
    ]
    return "\n".join(lines)


def per_site_table(rows: Iterable[dict]) -> str:
    """Markdown: per site (then `*`) and agent version, scored runs, success with its 95 %
    Wilson interval, mean reward."""
    lines = [
        "| site | agent | scored | success [95 % CI] | reward |",
        "|---|---|---|---|---|",
    ]
    overall = [r for r in rows if r["slice_kind"] == "all"]
    for r in sorted(overall, key=lambda r: (r["site"] == ALL, r["site"], r["agent_version"])):
        success = _fmt(r["success_rate"], ".2f")
        if success != "-":
            success += f" [{_fmt(r['success_ci_low'], '.2f')}, {_fmt(r['success_ci_high'], '.2f')}]"
        lines.append(
            f"| {r['site']} | {r['agent_version']} | {r['n_scored']} | {success} | "
            f"{_fmt(r['mean_reward'], '.3f')} |"
        )
    return "\n".join(lines)
