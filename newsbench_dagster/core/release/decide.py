"""The release decision: pure, from scores and runs (never the agents' own claims), the
decision record (seed 003): sample counts, per-slice results with intervals, critical
failures, verdict and reasons. No rate without its interval."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, date, datetime

from newsbench_dagster.core.agents.protocol import AgentManifest
from newsbench_dagster.core.analytics.stats import percentile, volatile_sites, wilson
from newsbench_dagster.core.release.evaluate import BASELINE, CANDIDATE
from newsbench_dagster.core.release.plan import TaskSet
from newsbench_dagster.core.release.policy import Policy
from newsbench_dagster.core.release.sequential import (
    boundaries,
    estimate,
    overall_verdict,
    slice_verdict,
    span,
    task_trials,
)
from newsbench_dagster.core.release.sequential import look as sequential_look
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


def _critical(policy: Policy, alpha: float, look: int, final: bool) -> float:
    """The look's critical value under the policy's spending plan (sequential.py)."""
    final_at = look if final else None
    return boundaries(alpha, policy.max_looks, policy.spending, final_at)[look - 1]


def _compare(
    cand: list[dict],
    base: list[dict],
    policy: Policy,
    *,
    overall: bool,
    alpha: float,
    look: int,
    final: bool,
) -> dict:
    """Candidate - baseline over the tasks both ran, with the look's repeated confidence
    interval and what it shows."""
    pairs = task_trials(_trials(cand), _trials(base))
    site_of = {r["task_id"]: r["site"] for r in cand + base}
    est = estimate(pairs, site_of)
    found = (
        None if est is None else sequential_look(est, _critical(policy, alpha, look, final), alpha)
    )
    if overall:
        verdict, reason = overall_verdict(
            found,
            margin=policy.margin,
            min_tasks=policy.min_tasks,
            min_sites=policy.min_clusters,
            block_min_tasks=policy.slice_min_tasks,
        )
    else:
        verdict, reason = slice_verdict(
            found, margin=policy.margin, min_tasks=policy.slice_min_tasks
        )
    return {
        "candidate": _rate(cand),
        "baseline": _rate(base),
        "diff": found.as_dict() if found else None,
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
    look: int = 1,
    final: bool | None = None,
) -> dict:
    """The decision at look `look` of the policy's `max_looks` on every row so far: verdict
    (pass | block | insufficient_evidence), reasons, overall and per-slice comparisons with
    their repeated confidence intervals, critical failures, sample counts. `final` (default:
    the last planned look) spends the alpha that is left."""
    drifted = drifted or {}
    if not 1 <= look <= policy.max_looks:
        raise ValueError(f"look {look} outside the policy's 1..{policy.max_looks}")
    final = look == policy.max_looks if final is None else final
    counted = [s for s in scores if s.get("counted", True)]
    role_of = {s["run_id"]: s.get("role") for s in scores}
    # Accuracy gating: counted, scored (not excluded) runs of gated tasks.
    gated_ids = {t for t, g in gating.items() if g.get("accuracy") == "gated"}
    eligible = [
        s
        for s in counted
        if not s.get("excluded") and s["task_id"] in gated_ids and s["site"] not in drifted
    ]
    # Flips are counted over both agents' trials, each task and agent apart: a site chosen by
    # the baseline's flips alone would drop tasks the baseline happened to fail half the time
    # and bias the difference that stays (an identical candidate then looks worse).
    volatile = volatile_sites(
        ((s["site"], (s["task_id"], s["role"]), bool(s["success"])) for s in eligible),
        policy.volatility_threshold,
    )
    eligible = [s for s in eligible if s["site"] not in volatile]
    cand = [s for s in eligible if s["role"] == CANDIDATE]
    base = [s for s in eligible if s["role"] == BASELINE]
    # Only tasks both ran (a task one side lost to the environment is not a pair).
    both = {s["task_id"] for s in cand} & {s["task_id"] for s in base}
    cand = [s for s in cand if s["task_id"] in both]
    base = [s for s in base if s["task_id"] in both]

    at = {"look": look, "final": final}
    overall = _compare(cand, base, policy, overall=True, alpha=policy.alpha, **at)
    groups = [
        (kind, value, [s for s in cand if s.get(kind) == value])
        for kind in SLICE_KINDS
        for value in sorted({s.get(kind) for s in cand if s.get(kind) is not None})
    ]
    # Every slice is its own chance of a false block: the slices with enough tasks share
    # alpha between them (Bonferroni).
    m = sum(len({s["task_id"] for s in c}) >= policy.slice_min_tasks for _, _, c in groups)
    slice_alpha = policy.alpha / max(m, 1)
    slices = []
    for kind, value, c in groups:
        b = [s for s in base if s.get(kind) == value]
        compared = _compare(c, b, policy, overall=False, alpha=slice_alpha, **at)
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
            f"excluded from gating, volatile: {site} (the agents flip on {share:.0%} of "
            "their repeated trials)"
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
        "sequential": {
            "look": look,
            "max_looks": policy.max_looks,
            "final": final,
            "spending": policy.spending,
            "alpha": policy.alpha,
            "slice_alpha": round(slice_alpha, 6),
        },
        "policy": policy.as_dict(),
    }


def _look(row: dict) -> int:
    value = row.get("look")
    return 1 if value is None or value != value else int(value)  # NaN: written before looks


def decide_looks(
    scores: Sequence[dict],
    runs: Sequence[dict],
    *,
    gating: dict[str, dict[str, str]],
    candidate_version: str,
    baseline_version: str,
    policy: Policy,
    drifted: dict[str, list[str]] | None = None,
    last_is_final: bool = False,
    open_: bool = False,
) -> dict:
    """The sequential decision on rows carrying their `look` (1 when absent): each look in
    turn decides on every row up to it, and the first look that decides ends it (later rows,
    if a policy with other numbers is replayed, are not looked at). `last_is_final`: the
    evaluation stopped at its last look without spending its budget (no tasks left), so that
    look spends the alpha left. `open_`: a next look is due (the pipeline takes one look per
    materialization), so an undecided evaluation has not stopped yet. The evaluation loop
    (`looks.run_release`) and the stored decision (`decide_saved`) both decide here, so they
    cannot differ."""
    looks = sorted({_look(s) for s in scores}) or [1]
    first = {s["task_id"] for s in scores if _look(s) == 1}
    history: list[dict] = []
    for k in looks:
        upto = [s for s in scores if _look(s) <= k]
        decision = decide(
            upto,
            [r for r in runs if _look(r) <= k],
            gating=gating,
            candidate_version=candidate_version,
            baseline_version=baseline_version,
            policy=policy,
            drifted=drifted,
            look=min(k, policy.max_looks),
            final=k >= policy.max_looks or (last_is_final and k == looks[-1]),
        )
        diff = decision["overall"]["diff"] or {}
        history.append(
            {
                "look": k,
                "runs": len(upto),
                "tasks_gated": decision["sample_counts"]["tasks_gated"],
                **{f: diff.get(f) for f in ("diff", "low", "high", "critical")},
                "verdict": decision["verdict"],
            }
        )
        if decision["verdict"] != "insufficient_evidence" or k >= policy.max_looks:
            break
    decision["sequential"].update(
        history=history,
        runs_spent=history[-1]["runs"],
        # Counted runs the policy allows: both agents, every trial, the first look's tasks
        # and heldout_n more per later look (reruns of environment failures come on top).
        budget_runs=2 * policy.trials * (len(first) + (policy.max_looks - 1) * policy.heldout_n),
        stopped="decided"
        if decision["verdict"] != "insufficient_evidence"
        else "budget"
        if history[-1]["look"] >= policy.max_looks
        else ("open" if open_ else "no tasks left"),
    )
    return decision


def decide_saved(
    scores: Sequence[dict],
    runs: Sequence[dict],
    saved: dict,
    policy: Policy,
    drifted: dict[str, list[str]] | None = None,
) -> dict:
    """The decision on a stored evaluation: its scores and runs (every look), the task set it
    ran (as `TaskSet.saved` kept it: gating, baseline, sites, whether it ran out of tasks)
    and the sites drifted now (only those in the task set count). The pipeline's
    `release_decision` and `newsbench gate --from-warehouse --recompute` both decide here."""
    return decide_looks(
        scores,
        runs,
        gating=saved["gating"],
        candidate_version=saved["candidate_version"],
        baseline_version=saved["baseline_version"],
        policy=policy,
        drifted={s: w for s, w in (drifted or {}).items() if s in saved["description"]["sites"]},
        last_is_final=bool(saved.get("ran_out")),
        open_=bool((saved.get("progress") or {}).get("open")),
    )


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _span(c: dict) -> str:
    d = c["diff"] or {}
    return span(d.get("diff"), d.get("low"), d.get("high"))


def _history(seq: dict) -> list[str]:
    """The looks table: what each look saw and said, and the budget."""
    rows = seq.get("history") or []
    if not rows:
        return []

    return [
        "| look | runs | tasks gated | difference [interval] | verdict |",
        "|---|---|---|---|---|",
        *[
            f"| {h['look']} | {h['runs']} | {h['tasks_gated']} | "
            f"{span(h['diff'], h['low'], h['high'])} | {h['verdict']} |"
            for h in rows
        ],
        "",
        f"Runs spent: {seq['runs_spent']} of a budget of {seq['budget_runs']} "
        f"({seq['max_looks']} looks at most; stopped: {seq['stopped']}).",
        "",
    ]


def render_markdown(decision: dict, record: dict | None = None) -> str:
    """The decision as a reviewer reads it in the UI."""
    o = decision["overall"]
    seq = decision["sequential"]
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
        f"Paired difference, candidate - baseline, look {seq['look']} of {seq['max_looks']} "
        f"({seq['spending']} spending; the interval holds over every look with "
        f"{1 - seq['alpha']:.1%} confidence per side): **{_span(o)}**",
        "",
        *_history(seq),
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
        "agent version": candidate.agent_version,
        "config hash": candidate.content_hash[:12],
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
        "sequential": decision["sequential"],
        "markdown": render_markdown(decision, record),
    }
