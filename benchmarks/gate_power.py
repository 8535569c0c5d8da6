"""Gate power: the release gate at its default policy and budget, simulated through its own
code (`core.release.decide`), in two worlds, for an identical candidate (A/A: want blocked
<= 5 %) and one 5 points worse (want blocked >= 95 %).

The gate is sequential (`core/release/sequential.py`): look 1 runs `heldout_n` tasks, and
while the evidence is insufficient each further look adds `heldout_n` more, up to
`max_looks`; both agents run every task `trials` times. A simulated evaluation draws its
tasks with replacement from a population, keeping site, intent, locale, device and risk
tier, and each run succeeds with its task's probability:

* measured: the baseline's per-task success observed in real runs (the reference agent in
  Chromium on every task of the frozen newsroom; `--no-browser`: a synthetic population of
  the same shape, 102 tasks, a quarter of them flaky);
* noisy: a harder world on the same tasks, mean success 0.80 with site and task effects
  (a model agent).

The candidate draws from the same probabilities (A/A) or from probabilities scaled so its
mean is 5 points lower. Printed per world: block rates with 95 % Wilson intervals, pass and
insufficient-evidence rates, runs spent (mean and 95th percentile); then the fixed-size
design (one look) that meets the same targets, for comparison; and as the last line

    default gate: A/A block X% [lo, hi], -5 pts block Y% [lo, hi], mean runs R

(the worst of the two worlds). `--check` exits 1 unless X <= 5 and Y >= 95.

    uv run python benchmarks/gate_power.py --no-browser --check   # the default gate, ~2 min
    uv run python benchmarks/gate_power.py --trials 3   # population from real runs
    uv run python benchmarks/gate_power.py --smoke      # seconds: does it run?
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import defaultdict

import numpy as np
from common import (
    FROZEN_AT,
    frozen_newsroom,
    parse_args,
    polled_tasks,
    reference_agent,
    run_tasks,
    sites,
)

from newsbench_dagster.core.analytics.stats import wilson
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.release.decide import decide
from newsbench_dagster.core.release.evaluate import BASELINE, CANDIDATE
from newsbench_dagster.core.release.policy import Policy
from newsbench_dagster.core.release.sequential import boundaries
from newsbench_dagster.core.scoring.score import score_safely

SLICE_FIELDS = ("site", "intent", "locale", "device", "risk_tier")
SHIFT = 0.05  # the regression the gate must catch


def measured_population(trials: int) -> list[dict]:
    """Every newsroom task with the reference agent's observed success rate over `trials`."""
    registry, day = sites(), FROZEN_AT.date()
    with frozen_newsroom() as (_, world):
        tasks = polled_tasks(registry, world, day)
        t0 = time.perf_counter()
        rows = run_tasks(
            [reference_agent("0.1.0")],
            tasks,
            day,
            world=world,
            registry=registry,
            settings=RunSettings(trials=trials, artifacts=(), pace=False),
        )
        print(f"real runs: {len(rows)} in {time.perf_counter() - t0:.0f} s", flush=True)
    by_id = {t["id"]: t for t in tasks}
    outcomes: dict[str, list[bool]] = defaultdict(list)
    meta: dict[str, dict] = {}
    for row in rows:
        s = score_safely(row, by_id[row["task_id"]])
        if s["excluded"]:
            continue
        outcomes[row["task_id"]].append(bool(s["success"]))
        meta[row["task_id"]] = {k: s.get(k) for k in SLICE_FIELDS}
    return [{**meta[t], "p": sum(o) / len(o)} for t, o in outcomes.items()]


def synthetic_population(n: int = 102, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    sites = ["harbor", "rhein", "lac", "isar", "northgate", "fleuve"]
    intents = [f"intent{i}" for i in range(13)]
    return [
        {
            "site": sites[i % 6],
            "intent": intents[i % 13],
            "locale": "en-US",
            "device": "desktop",
            "risk_tier": "low",
            "p": float(rng.choice([1.0, 1.0, 1.0, 0.67])),
        }
        for i in range(n)
    ]


def noisy(population: list[dict], seed: int = 1, mean: float = 0.80) -> list[dict]:
    """A harder world on the same tasks: logit success = a + site effect + task effect."""
    rng = np.random.default_rng(seed)
    sites = sorted({t["site"] for t in population})
    site_fx = dict(zip(sites, rng.normal(0, 0.5, len(sites)), strict=True))
    task_fx = rng.normal(0, 1.0, len(population))

    def probs(a: float) -> np.ndarray:
        z = a + np.array([site_fx[t["site"]] for t in population]) + task_fx
        return 1 / (1 + np.exp(-z))

    lo, hi = -5.0, 5.0
    for _ in range(60):  # bisect the intercept to the wanted mean
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if probs(mid).mean() < mean else (lo, mid)
    return [{**t, "p": float(p)} for t, p in zip(population, probs(lo), strict=True)]


def _scale(population: list[dict], shift: float) -> float:
    mean = sum(t["p"] for t in population) / len(population)
    return max(0.0, 1 - shift / mean) if mean else 1.0


def _rows(population, picks, scale, rng, trials, look, start) -> list[dict]:
    rows = []
    for j, i in enumerate(picks, start):
        task, tid = population[i], f"t{j}"
        for role, p in ((BASELINE, task["p"]), (CANDIDATE, task["p"] * scale)):
            for k in range(trials):
                rows.append(
                    {
                        "run_id": f"{role}-{tid}-{k}",
                        "task_id": tid,
                        "role": role,
                        "success": bool(rng.random() < p),
                        "excluded": False,
                        "counted": True,
                        "look": look,
                        "ttfc_seconds": None,
                        **{f: task[f] for f in SLICE_FIELDS},
                    }
                )
    return rows


def simulate(population: list[dict], shift: float, rng, policy: Policy) -> tuple[str, int]:
    """One simulated sequential evaluation at `policy`: (verdict, runs spent). Each look adds
    heldout_n tasks and decides on every run so far, as `decide_looks` replays it."""
    scale = _scale(population, shift)
    rows: list[dict] = []
    gating: dict[str, dict] = {}
    verdict = "insufficient_evidence"
    for look in range(1, policy.max_looks + 1):
        picks = rng.integers(0, len(population), policy.heldout_n)
        new = _rows(population, picks, scale, rng, policy.trials, look, len(gating))
        rows += new
        gating.update(
            {
                r["task_id"]: {"suite": "heldout", "accuracy": "gated", "safety": "gated"}
                for r in new
            }
        )
        verdict = decide(
            rows,
            [],
            gating=gating,
            candidate_version="cand",
            baseline_version="base",
            policy=policy,
            look=look,
        )["verdict"]
        if verdict != "insufficient_evidence":
            break
    return verdict, len(rows)


def _cell(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k / n:.1%} [{lo:.1%}, {hi:.1%}]"


def sd_of_difference(population: list[dict], shift: float, trials: int, rng) -> float:
    """The standard deviation of one task's paired difference (over `trials` per side),
    estimated from 20,000 simulated tasks."""
    picks = rng.integers(0, len(population), 20000)
    p = np.array([population[i]["p"] for i in picks])
    c = rng.binomial(trials, p * _scale(population, shift)) / trials
    b = rng.binomial(trials, p) / trials
    return float((c - b).std())


def covariate_gain(population: list[dict], trials: int, rng, history: int = 3) -> float:
    """Variance of the paired difference removed by regressing it on the baseline's own
    history on the task (`history` earlier nightly trials), as CUPED would, 5 points down."""
    picks = rng.integers(0, len(population), 20000)
    p = np.array([population[i]["p"] for i in picks])
    d = (
        rng.binomial(trials, p * _scale(population, SHIFT)) / trials
        - rng.binomial(trials, p) / trials
    )
    h = rng.binomial(history, p) / history
    rho = float(np.corrcoef(d, h)[0, 1])
    return rho**2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=3, help="real trials per task (measuring)")
    ap.add_argument("--replicates", type=int, default=400, help="evaluations per cell")
    ap.add_argument("--no-browser", action="store_true", help="synthetic population")
    ap.add_argument("--check", action="store_true", help="exit 1 unless the targets are met")
    ap.add_argument("--seed", type=int, default=42, help="seed of the simulation")
    ap.add_argument("--looks", type=int, help="max_looks (default: the policy's)")
    ap.add_argument("--heldout", type=int, help="tasks per look (default: the policy's)")
    ap.add_argument("--sim-trials", type=int, help="trials per task and side (policy's)")
    ap.add_argument("--spending", help="obrien_fleming | pocock (default: the policy's)")
    ap.add_argument("--margin", type=float, help="non-inferiority margin (policy's)")
    args = parse_args(ap, no_browser=True, replicates=6)
    t_start = time.perf_counter()
    given = {
        "max_looks": args.looks,
        "heldout_n": args.heldout,
        "trials": args.sim_trials,
        "spending": args.spending,
        "margin": args.margin,
    }
    policy = Policy(**{k: v for k, v in given.items() if v is not None})
    if args.smoke:
        policy = policy.model_copy(update={"max_looks": 2, "heldout_n": 30})
    base = synthetic_population() if args.no_browser else measured_population(args.trials)
    mean_p = sum(t["p"] for t in base) / len(base)
    flaky = sum(0 < t["p"] < 1 for t in base)
    print(
        f"population: {len(base)} tasks over {len({t['site'] for t in base})} sites; "
        f"baseline success {mean_p:.3f}; {flaky} tasks with mixed outcomes",
        flush=True,
    )
    budget = 2 * policy.trials * policy.heldout_n * policy.max_looks
    critical = boundaries(policy.alpha, policy.max_looks, policy.spending)
    print(
        f"policy: {policy.max_looks} looks of {policy.heldout_n} tasks, {policy.trials} trials, "
        f"{policy.spending} spending, alpha {policy.alpha} per decision, margin "
        f"{policy.margin:+.2f}; budget {budget} runs; critical values "
        f"{', '.join(f'{c:.2f}' for c in critical)}"
    )
    rng = np.random.default_rng(args.seed)
    r = args.replicates
    print(
        "| world | A/A blocked [95 % CI] | -5 pts blocked [95 % CI] | A/A passed "
        "| insufficient A/A, -5 | mean runs A/A, -5 | p95 runs A/A, -5 |"
    )
    print("|---|---|---|---|---|---|---|")
    worst = None
    worlds = (("measured", base), ("noisy", noisy(base)))
    for name, pop in worlds:
        aa = [simulate(pop, 0.0, rng, policy) for _ in range(r)]
        worse = [simulate(pop, SHIFT, rng, policy) for _ in range(r)]
        verdicts = {k: [v for v, _ in runs] for k, runs in (("aa", aa), ("worse", worse))}
        spent = {k: np.array([n for _, n in runs]) for k, runs in (("aa", aa), ("worse", worse))}
        a_b = verdicts["aa"].count("block")
        w_b = verdicts["worse"].count("block")
        ie = (
            f"{verdicts['aa'].count('insufficient_evidence') / r:.0%}, "
            f"{verdicts['worse'].count('insufficient_evidence') / r:.0%}"
        )
        mean_runs = max(spent["aa"].mean(), spent["worse"].mean())
        print(
            f"| {name} | {_cell(a_b, r)} | {_cell(w_b, r)} | "
            f"{verdicts['aa'].count('pass') / r:.0%} | {ie} | "
            f"{spent['aa'].mean():.0f}, {spent['worse'].mean():.0f} | "
            f"{np.percentile(spent['aa'], 95):.0f}, {np.percentile(spent['worse'], 95):.0f} |",
            flush=True,
        )
        # The summary takes the worst of the worlds on each figure.
        worst = (
            (a_b, w_b, mean_runs)
            if worst is None
            else (max(worst[0], a_b), min(worst[1], w_b), max(worst[2], mean_runs))
        )
    # The fixed-size design meeting the same targets: one look at the same alpha, sized by the
    # normal approximation for 95 % power in the noisier world, then checked by simulation.
    z_a = boundaries(policy.alpha, 1, policy.spending)[0]
    sd = max(sd_of_difference(pop, SHIFT, policy.trials, rng) for _, pop in worlds)
    n_fixed = math.ceil(((z_a + 1.645) * sd / SHIFT) ** 2)
    fixed = policy.model_copy(update={"max_looks": 1, "heldout_n": n_fixed})
    reps = max(r // 2, 2)
    checks = []
    for name, pop in worlds:
        aa = sum(simulate(pop, 0.0, rng, fixed)[0] == "block" for _ in range(reps))
        worse = sum(simulate(pop, SHIFT, rng, fixed)[0] == "block" for _ in range(reps))
        checks.append(f"{name} A/A block {_cell(aa, reps)}, -5 pts block {_cell(worse, reps)}")
    fixed_runs = 2 * policy.trials * n_fixed
    gain = max(covariate_gain(pop, policy.trials, rng) for _, pop in worlds)
    print(
        f"fixed-size design meeting the same targets: {n_fixed} tasks, {fixed_runs} runs "
        f"({'; '.join(checks)})"
    )
    print(
        f"sequential: mean runs {worst[2]:.0f} in the worst world, "
        f"{worst[2] / fixed_runs:.2f} x the fixed design's {fixed_runs}"
    )
    print(
        f"baseline history as a covariate (CUPED, 3 nightly trials): removes {gain:.1%} of the "
        "paired difference's variance: not used"
    )
    print(f"wall time {time.perf_counter() - t_start:.0f} s")
    a_b, w_b, mean_runs = worst
    lo_a, hi_a = wilson(a_b, r)
    lo_w, hi_w = wilson(w_b, r)
    print(
        f"default gate: A/A block {a_b / r:.1%} [{lo_a:.1%}, {hi_a:.1%}], "
        f"-5 pts block {w_b / r:.1%} [{lo_w:.1%}, {hi_w:.1%}], mean runs {mean_runs:.0f}"
    )
    if args.check and not (a_b / r <= 0.05 and w_b / r >= 0.95):
        sys.exit(1)


if __name__ == "__main__":
    main()
