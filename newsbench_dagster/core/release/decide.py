"""The release decision: pure, from scores and runs (never the agents' own claims), the
decision record (seed 003): sample counts, per-slice results with intervals, critical
failures, verdict and reasons. No rate without its interval."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, date, datetime

from newsbench_dagster.core.agents.protocol import AgentManifest
from newsbench_dagster.core.analytics.kpis import wilson
from newsbench_dagster.core.analytics.stats import (
    paired_difference,
    percentile,
    regression_verdict,
    slice_verdict,
    volatile_sites,
)
from newsbench_dagster.core.release.evaluate import BASELINE, CANDIDATE
from newsbench_dagster.core.release.plan import TaskSet
from newsbench_dagster.core.release.policy import Policy
from newsbench_dagster.core.scoring import compliance
from newsbench_dagster.core.scoring.oracle import oracle_version
from newsbench_dagster.core.scoring.witness import AMBIGUOUS

# Slices a candidate must pass separately (seed 003: domain, locale, task length, risk tier;
# the issue adds device and intent). Each is a column of the score rows.
SLICE_KINDS = ("site", "locale", "device", "intent", "risk_tier")


def _rate(rows: list[dict]) -> dict:
    wins = sum(bool(r["success"]) for r in rows)
    lo, hi = wilson(wins, len(rows))
    return {
        "n": len(rows),
        "success": round(wins / len(rows), 4) if rows else None,
        "ci_low": None if lo is None else round(lo, 4),
        "ci_high": None if hi is None else round(hi, 4),
    }


def _trials(rows: list[dict]) -> dict[str, list[bool]]:
    out: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        out[r["task_id"]].append(bool(r["success"]))
    return out


def _compare(
    cand: list[dict], base: list[dict], policy: Policy, *, overall: bool, level: float
) -> dict:
    """Paired candidate - baseline over the tasks both ran: clustered by site when the rows
    span enough sites, else by task (one site's tasks are its own clusters)."""
    sites = {r["site"] for r in cand + base}
    by_site = overall or len(sites) >= policy.min_clusters
    cluster_of = {r["task_id"]: (r["site"] if by_site else r["task_id"]) for r in cand + base}
    diff = paired_difference(
        _trials(cand),
        _trials(base),
        cluster_of,
        draws=policy.draws,
        seed=policy.seed,
        level=level,
        # Tasks as clusters: resampling them is the plain task bootstrap ("stratified" by
        # task would resample nothing).
        scheme=policy.interval if by_site else "cluster",
    )
    if overall:
        verdict, reason = regression_verdict(
            diff,
            margin=policy.margin,
            min_tasks=policy.min_tasks,
            min_clusters=policy.min_clusters,
        )
    else:
        verdict, reason = slice_verdict(
            diff,
            margin=policy.margin,
            min_tasks=policy.slice_min_tasks,
            min_clusters=policy.min_clusters if by_site else 1,
        )
    return {
        "candidate": _rate(cand),
        "baseline": _rate(base),
        "diff": diff.as_dict() if diff else None,
        "clustered_by": "site" if by_site else "task",
        "scheme": policy.interval if by_site else "task",
        "verdict": verdict,
        "reason": reason,
    }


def decide(
    scores: Sequence[dict],
    runs: Sequence[dict],
    *,
    gating: dict[str, dict[str, str]],
    candidate_version: str,
    baseline_version: str,
    policy: Policy,
    drifted: dict[str, list[str]] | None = None,
) -> dict:
    """The decision record's numbers: verdict (pass | block | insufficient_evidence), reasons,
    overall and per-slice comparisons with intervals, critical failures, sample counts."""
    drifted = drifted or {}
    counted = [s for s in scores if s.get("counted", True)]
    role_of = {s["run_id"]: s.get("role") for s in scores}
    # Accuracy gating: counted, scored (not excluded) runs of gated tasks.
    gated_ids = {t for t, g in gating.items() if g.get("accuracy") == "gated"}
    eligible = [
        s
        for s in counted
        if not s.get("excluded") and s["task_id"] in gated_ids and s["site"] not in drifted
    ]
    volatile = volatile_sites(
        ((s["site"], s["task_id"], bool(s["success"])) for s in eligible if s["role"] == BASELINE),
        policy.volatility_threshold,
    )
    eligible = [s for s in eligible if s["site"] not in volatile]
    cand = [s for s in eligible if s["role"] == CANDIDATE]
    base = [s for s in eligible if s["role"] == BASELINE]
    # Only tasks both ran (a task one side lost to the environment is not a pair).
    both = {s["task_id"] for s in cand} & {s["task_id"] for s in base}
    cand = [s for s in cand if s["task_id"] in both]
    base = [s for s in base if s["task_id"] in both]

    overall = _compare(cand, base, policy, overall=True, level=1 - 2 * policy.alpha)
    groups = [
        (kind, value, [s for s in cand if s.get(kind) == value])
        for kind in SLICE_KINDS
        for value in sorted({s.get(kind) for s in cand if s.get(kind) is not None})
    ]
    # Every slice is its own chance of a false block: the slices with enough tasks share
    # alpha between them (Bonferroni).
    m = sum(len({s["task_id"] for s in c}) >= policy.slice_min_tasks for _, _, c in groups)
    level = 1 - 2 * policy.alpha / max(m, 1)
    slices = []
    for kind, value, c in groups:
        b = [s for s in base if s.get(kind) == value]
        compared = _compare(c, b, policy, overall=False, level=level)
        slices.append({"kind": kind, "value": value, **compared})

    # Critical failures: every attempt of the candidate, gated or not (adversarial included).
    cand_runs = [r for r in runs if role_of.get(r["run_id"], r.get("role")) == CANDIDATE]
    cand_scores = [s for s in counted if s["role"] == CANDIDATE]
    comp = compliance.summarize(cand_runs, cand_scores, policy.pii_max_rate)
    reasons: list[str] = []
    if not comp["passed"]:
        reasons += [f"compliance: {r}" for r in comp["reasons"]]
    if overall["verdict"] == "block":
        reasons.append(f"overall: {overall['reason']}")
    blocked = [s for s in slices if s["verdict"] == "block"]
    reasons += [f"{s['kind']}={s['value']}: {s['reason']}" for s in blocked]
    if not comp["passed"] or overall["verdict"] == "block" or blocked:
        verdict = "block"
    elif overall["verdict"] == "insufficient_evidence":
        verdict = "insufficient_evidence"
        reasons.append(f"overall: insufficient evidence ({overall['reason']})")
    else:
        verdict = "pass"
        reasons.append(f"overall: {overall['reason']}")
    for site, why in sorted(drifted.items()):
        reasons.append(f"excluded from gating, drifted: {site} ({'; '.join(why)})")
    for site, share in volatile.items():
        reasons.append(
            f"excluded from gating, volatile: {site} (baseline flips on {share:.0%} of tasks)"
        )

    def ttfc(role: str) -> dict:
        values = [s.get("ttfc_seconds") for s in eligible if s["role"] == role]
        return {"p50": percentile(values, 50), "p95": percentile(values, 95)}

    excluded = Counter(
        ("ambiguous" if s.get("failure_class") == AMBIGUOUS else s.get("failure_class") or "?")
        for s in counted
        if s.get("excluded")
    )
    reruns = [
        {k: s.get(k) for k in ("run_id", "task_id", "role", "attempt", "counted", "failure_class")}
        for s in scores
        if s.get("attempt")
    ]
    return {
        "candidate_version": candidate_version,
        "baseline_version": baseline_version,
        "verdict": verdict,
        "reasons": reasons,
        "overall": overall,
        "slices": slices,
        "ttfc": {CANDIDATE: ttfc(CANDIDATE), BASELINE: ttfc(BASELINE)},
        "critical_failures": comp,
        "excluded_sites": {
            **{s: {"why": "drift", "detail": w} for s, w in drifted.items()},
            **{s: {"why": "volatile", "flip_share": v} for s, v in volatile.items()},
        },
        "sample_counts": {
            "tasks": len(gating),
            "tasks_by_suite": dict(Counter(g["suite"] for g in gating.values())),
            "tasks_gated": len(both),
            "runs": len(scores),
            "runs_counted": len(counted),
            "runs_gated": {CANDIDATE: len(cand), BASELINE: len(base)},
            "excluded": dict(excluded),
            "reruns": len(reruns),
        },
        "reruns": reruns,
        "policy": policy.as_dict(),
    }


def decide_saved(
    scores: Sequence[dict],
    runs: Sequence[dict],
    saved: dict,
    policy: Policy,
    drifted: dict[str, list[str]] | None = None,
) -> dict:
    """The decision on a stored evaluation: its scores and runs, the task set it ran (as
    `TaskSet.saved` kept it: gating, baseline, sites) and the sites drifted now (only those
    in the task set count). The pipeline's `release_decision` and `newsbench gate
    --from-warehouse --recompute` both decide here."""
    return decide(
        scores,
        runs,
        gating=saved["gating"],
        candidate_version=saved["candidate_version"],
        baseline_version=saved["baseline_version"],
        policy=policy,
        drifted={s: w for s, w in (drifted or {}).items() if s in saved["description"]["sites"]},
    )


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _span(c: dict) -> str:
    d = c["diff"]
    if not d:
        return "-"
    return f"{d['diff']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"


def render_markdown(decision: dict, record: dict | None = None) -> str:
    """The decision as a reviewer reads it in the UI."""
    o = decision["overall"]
    record = record or {}
    icon = {"pass": "PASS", "block": "BLOCK", "insufficient_evidence": "INSUFFICIENT EVIDENCE"}
    lines = [
        f"## {icon[decision['verdict']]}: {decision['candidate_version']} vs "
        f"{decision['baseline_version']}",
        "",
        *[f"- {r}" for r in decision["reasons"]],
        "",
        "| | success | 95 % interval | runs |",
        "|---|---|---|---|",
        *[
            f"| {who} | {_pct(o[who]['success'])} | "
            f"[{_pct(o[who]['ci_low'])}, {_pct(o[who]['ci_high'])}] | {o[who]['n']} |"
            for who in (CANDIDATE, BASELINE)
        ],
        "",
        f"Paired difference (candidate - baseline, {o['scheme']} bootstrap by "
        f"{o['clustered_by']}, "
        f"{(o['diff'] or {}).get('level', 0):.0%} interval): **{_span(o)}**",
        "",
        "| slice | value | candidate | baseline | difference [interval] | verdict |",
        "|---|---|---|---|---|---|",
        *[
            f"| {s['kind']} | {s['value']} | {_pct(s['candidate']['success'])} | "
            f"{_pct(s['baseline']['success'])} | {_span(s)} | {s['verdict']} |"
            for s in decision["slices"]
        ],
    ]
    if record:
        lines += [
            "",
            "| record | |",
            "|---|---|",
            *[f"| {k} | {v} |" for k, v in record.items()],
        ]
    return "\n".join(lines)


def site_table(decision: dict) -> str:
    """Markdown: per site, candidate and baseline success, the paired difference with its
    interval, and the slice's verdict."""
    lines = [
        "| site | candidate | baseline | difference [interval] | verdict |",
        "|---|---|---|---|---|",
    ]
    for s in decision["slices"]:
        if s["kind"] == "site":
            lines.append(
                f"| {s['value']} | {s['candidate']['success']} | {s['baseline']['success']} | "
                f"{_span(s)} | {s['verdict']} |"
            )
    return "\n".join(lines)


def decision_row(
    decision: dict,
    *,
    task_set: TaskSet | dict,
    candidate: AgentManifest,
    environment: dict,
    day: date,
    dataset_revision: str,
) -> dict:
    """The `release_decision` row: the decision plus what it was decided on."""
    o = decision["overall"]
    diff = o["diff"] or {}
    desc = task_set.description if isinstance(task_set, TaskSet) else task_set
    record = {
        "dataset revision": dataset_revision,
        "oracle": oracle_version(),
        "adapter": candidate.adapter,
        "model": candidate.model or "-",
        "prompt hash": candidate.prompt_hash or "-",
        "trials": decision["policy"]["trials"],
    }
    return {
        "candidate_version": decision["candidate_version"],
        "baseline_version": decision["baseline_version"],
        "day": day,
        "decided_at": datetime.now(UTC),
        "verdict": decision["verdict"],
        "reasons": decision["reasons"],
        "dataset_revision": dataset_revision,
        "task_set": desc,
        "environment": environment,
        "model": candidate.model,
        "prompt_hash": candidate.prompt_hash,
        "adapter": candidate.adapter,
        "policy": decision["policy"],
        "oracle_version": record["oracle"],
        "n_tasks": decision["sample_counts"]["tasks"],
        "n_trials": decision["policy"]["trials"],
        "sample_counts": decision["sample_counts"],
        "candidate_success": o[CANDIDATE]["success"],
        "candidate_ci_low": o[CANDIDATE]["ci_low"],
        "candidate_ci_high": o[CANDIDATE]["ci_high"],
        "baseline_success": o[BASELINE]["success"],
        "baseline_ci_low": o[BASELINE]["ci_low"],
        "baseline_ci_high": o[BASELINE]["ci_high"],
        "diff": diff.get("diff"),
        "diff_low": diff.get("low"),
        "diff_high": diff.get("high"),
        "slices": decision["slices"],
        "critical_failures": decision["critical_failures"],
        "excluded_sites": decision["excluded_sites"],
        "reruns": decision["reruns"],
        "markdown": render_markdown(decision, record),
    }
