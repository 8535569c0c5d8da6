"""Release evaluation: a candidate agent version against the shipped baseline, on the same
task seeds, interleaved, with repeated trials, and the decision a reviewer can defend.

The task set is a frozen regression set (suites/regression), a held-out sample drawn from
recent `news_tasks`, and the adversarial slice (scored for safety, never for accuracy). Both
agents run every task (`Runner` with `interleave`: A B, then B A). A run the environment broke
is rerun up to `max_reruns` times; every attempt stays on the record and `counted` marks the
one that counts. The decision (`decide`) is pure: it reads scores and runs, never the agents'
own claims, and returns the decision record (seed 003): sample counts, per-slice results
with intervals, critical failures, verdict and reasons. No rate without its interval.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from newsbench_dagster.core.agents.protocol import Agent, AgentManifest
from newsbench_dagster.core.analytics.stats import (
    MIN_CLUSTERS,
    MIN_TASKS,
    REGRESSION_MARGIN,
    paired_difference,
    percentile,
    regression_verdict,
    slice_verdict,
    volatile_sites,
    wilson,
)
from newsbench_dagster.core.scoring import compliance
from newsbench_dagster.core.scoring.failures import EnvFailure
from newsbench_dagster.core.scoring.oracle import oracle_version
from newsbench_dagster.core.scoring.score import score_safely
from newsbench_dagster.core.scoring.witness import AMBIGUOUS, apply_witness
from newsbench_dagster.core.tasks.sampling import pick, stratified_sample

CANDIDATE, BASELINE = "candidate", "baseline"
# Slices a candidate must pass separately (seed 003: domain, locale, task length, risk tier;
# the issue adds device and intent). Each is a column of the score rows.
SLICE_KINDS = ("site", "locale", "device", "intent", "risk_tier")
_ENV_CLASSES = {e.value for e in EnvFailure}


@dataclass(frozen=True)
class Policy:
    """The numbers the gates use, stored with every decision."""

    margin: float = REGRESSION_MARGIN  # block when the CI's lower bound is below this
    min_tasks: int = MIN_TASKS  # overall: fewer is insufficient evidence
    min_clusters: int = MIN_CLUSTERS  # overall: at least this many sites
    slice_min_tasks: int = 10  # a slice with fewer tasks is reported, not gated
    trials: int = 2
    max_reruns: int = 2  # environment failures rerun up to this many times
    volatility_threshold: float = 0.3  # baseline flip share above which a site is excluded
    pii_max_rate: float = compliance.PII_MAX_RATE
    draws: int = 2000  # bootstrap resamples
    # One-sided error of the gate: the overall lower bound is a one-sided 95 % bound (the
    # two-sided 90 % interval's low end); slices share alpha between them (Bonferroni).
    alpha: float = 0.05
    # Bootstrap over tasks within each site ("stratified": the allowlist is the population)
    # or over whole sites ("cluster": too narrow with a handful of sites; see gate_power).
    interval: str = "stratified"
    seed: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class TaskSet:
    """What both agents run, and how each task is gated."""

    tasks: list[dict]
    gating: dict[str, dict[str, str]]  # task id -> {suite, accuracy, safety, reason?}
    description: dict[str, Any] = field(default_factory=dict)

    @property
    def revision(self) -> str:
        """The dataset revision: a hash of the tasks exactly as run (ids, seeds, oracles)."""
        body = json.dumps(sorted(self.tasks, key=lambda t: t["id"]), sort_keys=True, default=str)
        return "tasks@" + hashlib.sha256(body.encode()).hexdigest()[:12]


def build_task_set(
    regression: Iterable[Any],
    adversarial: Iterable[Any],
    recent: Sequence[dict],
    *,
    heldout_n: int,
    seed: int,
    sites: Iterable[str] | None = None,
    drifted: dict[str, list[str]] | None = None,
) -> TaskSet:
    """Regression and adversarial suite tasks (`SuiteTask`s) plus a seeded, stratified sample
    of `heldout_n` recent tasks; only `sites` when given. Tasks of a drifted site stay in the
    set (their runs are reported) but are excluded from accuracy gating, with the reason."""
    keep = set(sites) if sites is not None else None
    drifted = drifted or {}
    tasks: list[dict] = []
    gating: dict[str, dict[str, str]] = {}

    def add(task: dict, suite: str, gate: dict[str, str]) -> None:
        if keep is not None and task["site"] not in keep or task["id"] in gating:
            return
        gate = {"suite": suite, **gate}
        if task["site"] in drifted and gate.get("accuracy") == "gated":
            gate = {**gate, "accuracy": "excluded", "reason": f"drift: {task['site']}"}
        tasks.append(task)
        gating[task["id"]] = gate

    for st in regression:
        add(st.task, "regression", dict(st.gating))
    pool = [t for t in recent if keep is None or t["site"] in keep]
    drawn = stratified_sample(pool, min(heldout_n, len(pool)), seed)
    for task in pick(pool, drawn):
        add(task, "heldout", {"accuracy": "gated", "safety": "gated"})
    for st in adversarial:
        add(st.task, "adversarial", dict(st.gating))
    if drifted:  # the tasks themselves carry the mark too (run.json, the artifacts)
        from newsbench_dagster.core.analytics.drift import mark_tasks

        tasks = mark_tasks(tasks, drifted)
    counts = Counter(g["suite"] for g in gating.values())
    return TaskSet(
        tasks,
        gating,
        {
            "kind": "release",
            "counts": dict(counts),
            "heldout": {"pool": len(pool), **drawn.as_dict()},
            "sites": sorted({t["site"] for t in tasks}),
            "drifted_sites": sorted(drifted),
            "task_ids": sorted(gating),
        },
    )


def plan_task_set(
    registry: Any,
    fetcher: Any,
    *,
    suites_dir: str | Path,
    recent: Sequence[dict],
    day: date,
    sites: Sequence[str] | None = None,
    intents: Iterable[str] | None = None,
    heldout_n: int,
    seed: int,
    drifted: dict[str, list[str]] | None = None,
    warn: Callable[[str], None] = lambda _: None,
) -> TaskSet:
    """The release task set for `sites` and `intents`: suites from `suites_dir`, held-out
    tasks from `recent` (news_tasks), or, with none, from what the feeds give now (polled
    through `fetcher`). Suite problems are passed to `warn`, and those tasks left out."""
    from newsbench_dagster.core.tasks.produce import todays_tasks
    from newsbench_dagster.core.tasks.suites import load_suites

    keys = list(sites or [s.key for s in registry.sites])
    wanted = set(intents) if intents else None

    def ok(task: dict) -> bool:
        return task["site"] in keys and (wanted is None or task["intent"] in wanted)

    pool, source = [t for t in recent if ok(t)], "news_tasks"
    if not pool:  # nothing polled lately: draw from what the feeds give now
        pool, source = [t for t in todays_tasks(registry, fetcher, day, keys) if ok(t)], "poll"
    suites = load_suites(suites_dir, registry.allowed_origins, [s.key for s in registry.sites])
    for problem in suites.problems:
        warn(f"suite task left out: {problem}")
    picked = {
        name: [st for st in suites.tasks if st.suite == name and ok(st.task)]
        for name in ("regression", "adversarial")
    }
    task_set = build_task_set(
        picked["regression"],
        picked["adversarial"],
        pool,
        heldout_n=heldout_n,
        seed=seed,
        sites=keys,
        drifted=drifted,
    )
    task_set.description["heldout"]["source"] = source
    return task_set


# -- running -------------------------------------------------------------------------------
@dataclass
class Evaluation:
    runs: list[dict]  # candidate_runs rows: every attempt
    scores: list[dict]  # candidate_scores rows: every attempt


def _is_env(score: dict) -> bool:
    return bool(score.get("excluded")) and score.get("failure_class") in _ENV_CLASSES


def evaluate(
    candidate: Agent,
    baseline: Agent,
    task_set: TaskSet,
    day: date,
    runner_for: Callable[[list[Agent]], Any],
    *,
    max_reruns: int = 2,
    progress: Callable[[dict], None] | None = None,
) -> Evaluation:
    """Run both agents on every task, interleaved (the runner `runner_for` builds must have
    `interleave` and the trials set), rerun environment failures, and score every attempt."""
    cand_v, base_v = candidate.manifest.agent_version, baseline.manifest.agent_version
    if cand_v == base_v:
        raise ValueError(f"candidate and baseline are the same version ({cand_v})")
    role = {cand_v: CANDIDATE, base_v: BASELINE}
    by_id = {t["id"]: t for t in task_set.tasks}
    namespace = f"release:{cand_v}"  # the baseline's runs here are not its nightly runs
    runner = runner_for([candidate, baseline])
    runner.settings.namespace = namespace
    if not runner.settings.interleave:
        raise ValueError("a release evaluation runs interleaved (RunSettings.interleave)")
    slots = {
        (t["id"], a.manifest.agent_version, trial): i
        for i, (t, a, trial) in enumerate(runner.schedule(task_set.tasks))
    }
    rows = asyncio.run(runner.run(task_set.tasks, day, progress))
    for r in rows:
        r["attempt"] = 0
    scores = {r["run_id"]: score_safely(r, by_id.get(r["task_id"])) for r in rows}
    attempts: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        attempts[(r["task_id"], r["agent_version"], r["trial"])].append(r)
    agents = {cand_v: candidate, base_v: baseline}
    for attempt in range(1, max_reruns + 1):
        todo = [key for key, tried in attempts.items() if _is_env(scores[tried[-1]["run_id"]])]
        if not todo:
            break
        for version in (cand_v, base_v):
            for trial in sorted({k[2] for k in todo if k[1] == version}):
                # One batch per trial, so a task appears once and its row maps back by id.
                mine = {k[0]: k for k in todo if k[1] == version and k[2] == trial}
                rerunner = runner_for([agents[version]])
                rerunner.settings.trials, rerunner.settings.first_trial = 1, trial
                rerunner.settings.attempt, rerunner.settings.namespace = attempt, namespace
                batch = [by_id[t] for t in mine]
                for row in asyncio.run(rerunner.run(batch, day, progress)):
                    key = mine[row["task_id"]]
                    row["attempt"] = attempt
                    scores[row["run_id"]] = score_safely(row, by_id.get(row["task_id"]))
                    attempts[key].append(row)
                    rows.append(row)
    # The first attempt that is not an environment failure counts, else the last one.
    counted = {
        next((r for r in tried if not _is_env(scores[r["run_id"]])), tried[-1])["run_id"]
        for tried in attempts.values()
    }
    out_runs, out_scores = [], []
    witness_rows = apply_witness([scores[r["run_id"]] for r in rows if r["run_id"] in counted])
    witnessed = {s["run_id"]: s for s in witness_rows}
    for r in rows:
        extra = {
            "candidate_version": cand_v,
            "role": role[r["agent_version"]],
            "attempt": r["attempt"],
            "counted": r["run_id"] in counted,
            "slot": slots.get((r["task_id"], r["agent_version"], r["trial"])),
        }
        s = witnessed.get(r["run_id"], scores[r["run_id"]])
        out_runs.append({**r, **extra})
        out_scores.append({**s, **{k: v for k, v in extra.items() if k != "slot"}})
    return Evaluation(out_runs, out_scores)


# -- deciding ------------------------------------------------------------------------------
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
    comp = compliance.summarize(cand_runs, cand_scores)
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
