"""Runs scored per second on one core, against serialising the same runs to JSON.

Real runs first: the reference agent through the runner against a frozen newsroom (all six
sites, every read-only intent), observations, probes and world events included. Then, in this
one process (one core), `score_run` scores every run repeatedly, alternating with a baseline
that serialises each run row to JSON (what storing it costs anyway). Medians are compared;
the last line printed is the ratio of throughputs.

    uv run python benchmarks/scoring_throughput.py [--articles 3] [--rounds 5]
    uv run python benchmarks/scoring_throughput.py --smoke   # one site, 1 round of 2 passes
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from common import (
    FROZEN_AT,
    frozen_newsroom,
    parse_args,
    polled_tasks,
    reference_agent,
    run_tasks,
    sites,
)

from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.scoring.score import score_run
from newsbench_dagster.core.tasks.intents import READ_INTENTS


def serialise(run: dict) -> str:
    return json.dumps(run, default=str)


def make_runs(articles: int, keys: list[str] | None) -> tuple[list[dict], dict[str, dict]]:
    registry, day = sites(), FROZEN_AT.date()
    with frozen_newsroom() as (_, world):
        tasks = polled_tasks(registry, world, day, READ_INTENTS, articles, keys)
        runs = run_tasks(
            [reference_agent()],
            tasks,
            day,
            world=world,
            registry=registry,
            settings=RunSettings(screenshot=False),
        )
    return runs, {t["id"]: t for t in tasks}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--articles", type=int, default=3, help="metadata tasks per site")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20, help="passes over the runs per round")
    ap.add_argument("--sites", help="comma-separated site keys (default: all)")
    args = parse_args(ap, articles=1, rounds=1, repeat=2, sites="harbor")

    runs, tasks = make_runs(args.articles, args.sites.split(",") if args.sites else None)
    started = time.perf_counter()
    successes = sum(bool(score_run(r, tasks[r["task_id"]])["success"]) for r in runs)
    cold = len(runs) / (time.perf_counter() - started)
    print(f"{len(runs)} real runs, {successes} successes by the oracle")
    print(f"first pass (cold caches): {cold:.0f} runs/s")
    ours, base = [], []
    for r in range(args.rounds):
        order = ["oracle", "json"] if r % 2 == 0 else ["json", "oracle"]
        for name in order:
            started = time.perf_counter()
            for _ in range(args.repeat):
                for run in runs:
                    if name == "oracle":
                        score_run(run, tasks[run["task_id"]])
                    else:
                        serialise(run)
            rate = args.repeat * len(runs) / (time.perf_counter() - started)
            (ours if name == "oracle" else base).append(rate)
            print(f"round {r + 1} {name:6} {rate:10.0f} runs/s")
    o, b = statistics.median(ours), statistics.median(base)
    print(f"median oracle {o:.0f} runs/s, JSON serialisation {b:.0f} runs/s (one core)")
    print(f"ratio oracle/json throughput: {o / b:.3f}")


if __name__ == "__main__":
    main()
