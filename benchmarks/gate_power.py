"""Gate power: how often the release gate blocks a candidate 5 points worse than the
baseline (want >= 95 %), and how often it blocks the baseline against itself (A/A, want
<= 5 %), by the number of tasks, through the gate's own code (`core.release.decide`).

The task population and the baseline's per-task success come from real runs: the reference
agent in Chromium on every task the frozen newsroom gives (all six sites, all intents),
`--trials` times each. Evaluations are then simulated from that population (tasks drawn
with replacement, site, intent, locale, device and risk tier kept), in two scenarios:

* measured: each task's success probability is the reference agent's observed rate;
* noisy: a harder world, mean success 0.80 with site and task effects (a model agent).

The candidate either draws from the same probabilities (A/A) or from probabilities scaled
down so its mean is 5 points lower. Each cell is `--replicates` simulated evaluations with
2 trials per task and side. Printed: block rates with 95 % Wilson intervals, and per
scenario the smallest task count meeting both targets.

    uv run python benchmarks/gate_power.py [--trials 3] [--replicates 200] [--sizes 25,100,400]
    uv run python benchmarks/gate_power.py --no-browser   # population from a synthetic draw
    uv run python benchmarks/gate_power.py --smoke   # synthetic, 25 tasks, 4 replicates
"""

from __future__ import annotations

import argparse
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

from newsbench_dagster.core.analytics.kpis import wilson
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.release.decide import decide
from newsbench_dagster.core.release.evaluate import BASELINE, CANDIDATE
from newsbench_dagster.core.release.policy import Policy
from newsbench_dagster.core.scoring.score import score_safely

SLICE_FIELDS = ("site", "intent", "locale", "device", "risk_tier")


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


def simulate(
    population: list[dict], n_tasks: int, shift: float, rng, policy: Policy, trials: int = 2
) -> str:
    """One simulated evaluation of n_tasks: the verdict of `decide`."""
    picks = rng.integers(0, len(population), n_tasks)
    base_p = np.array([population[i]["p"] for i in picks])
    scale = max(0.0, 1 - shift / base_p.mean()) if base_p.mean() else 1.0
    cand_p = base_p * scale
    rows = []
    gating = {}
    for j, i in enumerate(picks):
        task = population[i]
        tid = f"t{j}"
        gating[tid] = {"suite": "heldout", "accuracy": "gated", "safety": "gated"}
        for role, p in ((BASELINE, base_p[j]), (CANDIDATE, cand_p[j])):
            for k in range(trials):
                rows.append(
                    {
                        "run_id": f"{role}-{tid}-{k}",
                        "task_id": tid,
                        "role": role,
                        "success": bool(rng.random() < p),
                        "excluded": False,
                        "counted": True,
                        "ttfc_seconds": None,
                        **{f: task[f] for f in SLICE_FIELDS},
                    }
                )
    d = decide(
        rows,
        [],
        gating=gating,
        candidate_version="cand",
        baseline_version="base",
        policy=policy,
    )
    return d["verdict"]


def coverage(population: list[dict], n_tasks: int, replicates: int, level: float = 0.90) -> None:
    """How often the A/A interval holds the true difference (0), per bootstrap scheme: the
    nominal rate is `level`; below it the gate blocks identical agents more than it says."""
    from newsbench_dagster.core.analytics.stats import paired_difference

    rng = np.random.default_rng(5)
    held = {"cluster": 0, "stratified": 0}
    for r in range(replicates):
        cand, base, site = {}, {}, {}
        for j, i in enumerate(rng.integers(0, len(population), n_tasks)):
            p, t = population[i]["p"], f"t{j}"
            cand[t], base[t] = list(rng.random(2) < p), list(rng.random(2) < p)
            site[t] = population[i]["site"]
        for scheme in held:
            d = paired_difference(cand, base, site, draws=1000, seed=r, level=level, scheme=scheme)
            held[scheme] += d.low <= 0 <= d.high
    shares = ", ".join(f"{k} {v / replicates:.1%}" for k, v in held.items())
    print(f"A/A coverage of the {level:.0%} interval, {n_tasks} tasks: {shares}")


def _cell(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k / n:.1%} [{lo:.1%}, {hi:.1%}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=3, help="real trials per task (measuring)")
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--sizes", default="25,50,100,200,400")
    ap.add_argument("--draws", type=int, default=1000, help="bootstrap resamples per interval")
    ap.add_argument("--sim-trials", type=int, default=2, help="trials per task and side")
    ap.add_argument("--interval", default="stratified", help="stratified | cluster")
    ap.add_argument("--coverage", type=int, default=0, help="also: A/A interval coverage at N")
    ap.add_argument("--no-browser", action="store_true")
    args = parse_args(ap, no_browser=True, replicates=4, sizes="25", draws=50)
    sizes = [int(x) for x in args.sizes.split(",")]
    base = synthetic_population() if args.no_browser else measured_population(args.trials)
    mean_p = sum(t["p"] for t in base) / len(base)
    flaky = sum(0 < t["p"] < 1 for t in base)
    print(
        f"population: {len(base)} tasks over {len({t['site'] for t in base})} sites; "
        f"baseline success {mean_p:.3f}; {flaky} tasks with mixed outcomes",
        flush=True,
    )
    policy = Policy(draws=args.draws, trials=args.sim_trials, interval=args.interval)
    rng = np.random.default_rng(42)
    print(
        "| scenario | tasks | A/A blocked [95 % CI] | -5 pts blocked [95 % CI] "
        "| insufficient evidence A/A, -5 | s/eval |"
    )
    print("|---|---|---|---|---|---|")
    needed = {}
    for name, pop in (("measured", base), ("noisy", noisy(base))):
        for n in sizes:
            t0 = time.perf_counter()
            reps, k = range(args.replicates), args.sim_trials
            aa = [simulate(pop, n, 0.0, rng, policy, k) for _ in reps]
            worse = [simulate(pop, n, 0.05, rng, policy, k) for _ in reps]
            per = (time.perf_counter() - t0) / (2 * args.replicates)
            a_b, w_b = aa.count("block"), worse.count("block")
            r = args.replicates
            ie = f"{aa.count('insufficient_evidence')}, {worse.count('insufficient_evidence')}"
            print(
                f"| {name} | {n} | {_cell(a_b, r)} | {_cell(w_b, r)} | {ie} | {per:.3f} |",
                flush=True,
            )
            if name not in needed and a_b / r <= 0.05 and w_b / r >= 0.95:
                needed[name] = n
    if args.coverage:
        coverage(noisy(base), args.coverage, args.replicates)
    for name in ("measured", "noisy"):
        got = needed.get(name)
        print(
            f"{name}: smallest task count meeting both targets: "
            + (str(got) if got else f"none up to {max(sizes)}")
        )


if __name__ == "__main__":
    main()
