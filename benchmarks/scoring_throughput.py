"""Runs scored per second on one core, against serialising the same runs to JSON.

Real runs first: the reference agent through the runner against a frozen newsroom (all six
sites, every read-only intent), observations, probes and world events included. Then, in this
one process (one core), `score_run` scores every run repeatedly, alternating with a baseline
that serialises each run row to JSON (what storing it costs anyway). Medians are compared;
the last line printed is the ratio of throughputs.

    uv run python benchmarks/scoring_throughput.py [--articles 3] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime

from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.harness.runner import Runner, RunSettings
from newsbench_dagster.core.scoring.score import score_run
from newsbench_dagster.core.tasks.produce import READ_INTENTS, make_tasks, poll_site
from newsbench_dagster.core.web.network import Fetcher, RobotsRules
from newsbench_dagster.core.web.sites import load_sites
from newsbench_dagster.newsroom import FixedClock, Newsroom, NewsroomServer
from newsbench_dagster.newsroom.launcher import newsroom_routing
from newsbench_dagster.paths import SITES_FILE

FROZEN_AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def serialise(run: dict) -> str:
    return json.dumps(run, default=str)


def make_runs(articles: int) -> tuple[list[dict], dict[str, dict]]:
    registry = load_sites(SITES_FILE)
    with (
        NewsroomServer(Newsroom(seed=7), clock=FixedClock(FROZEN_AT)) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        routing = newsroom_routing(server.address)
        tasks: list[dict] = []
        with Fetcher(routing, registry.allowed_origins) as fetcher:
            sites = registry.sites
            for i, site in enumerate(sites):
                rows = poll_site(site, fetcher, None, FROZEN_AT.date())
                tasks += make_tasks(
                    site,
                    FROZEN_AT.date(),
                    rows,
                    articles_per_site=articles,
                    intents=READ_INTENTS,
                    partner=sites[(i + 1) % len(sites)],
                )
            robots = RobotsRules.fetch(fetcher, registry.allowed_origins)
        agent = build_agent(AgentManifest(name="reference", version="bench", adapter="reference"))
        runner = Runner(
            [agent],
            options=BrowserOptions(routing=routing),
            robots=robots,
            store=LocalArtifactStore(tmp),
            settings=RunSettings(screenshot=False),
        )
        runs = asyncio.run(runner.run(tasks, FROZEN_AT.date()))
    return runs, {t["id"]: t for t in tasks}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--articles", type=int, default=3, help="metadata tasks per site")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20, help="passes over the runs per round")
    args = ap.parse_args()

    runs, tasks = make_runs(args.articles)
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
