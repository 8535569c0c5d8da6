"""Harness overhead: the same N tasks through the Newsbench runner (reference agent, request
guard, observations, screenshots, artifacts) and through a bare Playwright script doing the
same navigation and extraction, in one process, against a frozen newsroom.

Rounds alternate (harness, bare, bare, harness, ...) so drift in machine load hits both; the
medians are compared. The last line printed is the ratio harness/bare.

    uv run python benchmarks/overhead.py [--tasks 24] [--rounds 3] [--concurrency 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime
from functools import partial

from playwright.async_api import async_playwright

from newsbench_dagster.core.agents import AgentManifest, build_agent
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.browser import BrowserOptions
from newsbench_dagster.core.network import Fetcher, RobotsRules, Routing
from newsbench_dagster.core.producer import make_tasks, poll_site
from newsbench_dagster.core.runner import Runner, RunSettings
from newsbench_dagster.core.scoring import score_run
from newsbench_dagster.core.sites import load_sites
from newsbench_dagster.newsroom import FixedClock, Newsroom, NewsroomServer
from newsbench_dagster.paths import SITES_FILE

FROZEN_AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
LEAD_LINK = "main :is(h1, h2, h3) a[href]"
JSONLD_HEADLINE = """() => {
  for (const s of document.querySelectorAll('script[type="application/ld+json"]')) {
    try { const d = JSON.parse(s.textContent); if (d.headline) return d; } catch (e) {}
  }
  return null;
}"""


def make_task_list(routing: Routing, n: int) -> tuple[list[dict], RobotsRules]:
    registry = load_sites(SITES_FILE)
    tasks: list[dict] = []
    with Fetcher(routing, registry.allowed_origins) as fetcher:
        for site in registry.sites:
            rows = poll_site(site, fetcher, None, FROZEN_AT.date())
            tasks += make_tasks(site, FROZEN_AT.date(), rows, articles_per_site=n)
        robots = RobotsRules.fetch(fetcher, registry.allowed_origins)
    # Interleave intents and sites, then take N.
    tasks.sort(key=lambda t: (t["seed"] % 97, t["id"]))
    return tasks[:n], robots


async def bare(options: BrowserOptions, tasks: list[dict], concurrency: int) -> list[dict]:
    """What a team would write without a harness: navigate, extract, close."""
    sem = asyncio.Semaphore(concurrency)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(**options.launch_kwargs())

        async def one(task: dict) -> dict:
            async with sem:
                context = await browser.new_context(**options.context_kwargs())
                page = await context.new_page()
                await page.goto(task["entry_url"], wait_until="domcontentloaded")
                if task["intent"] == "find_top_headline":
                    await page.locator(LEAD_LINK).first.click()
                    await page.wait_for_load_state("domcontentloaded")
                data = await page.evaluate(JSONLD_HEADLINE)
                await context.close()
                return {"task_id": task["id"], "headline": (data or {}).get("headline")}

        out = await asyncio.gather(*(one(t) for t in tasks))
        await browser.close()
    return out


def timed(fn):
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument(
        "--no-screenshot",
        action="store_true",
        help="harness without its final screenshot, to see what that costs",
    )
    args = ap.parse_args()

    with NewsroomServer(Newsroom(seed=7), clock=FixedClock(FROZEN_AT)) as server:
        routing = Routing.via_proxy(server.address)
        options = BrowserOptions(routing=routing)
        tasks, robots = make_task_list(routing, args.tasks)
        agent = build_agent(AgentManifest(name="reference", version="bench", adapter="reference"))
        harness_times, bare_times = [], []
        successes = bare_ok = 0
        for r in range(args.rounds):
            with tempfile.TemporaryDirectory() as tmp:
                runner = Runner(
                    [agent],
                    options=options,
                    robots=robots,
                    store=LocalArtifactStore(tmp),
                    settings=RunSettings(
                        concurrency=args.concurrency, screenshot=not args.no_screenshot
                    ),
                )
                order = [
                    ("harness", partial(asyncio.run, runner.run(tasks, FROZEN_AT.date()))),
                    ("bare", partial(asyncio.run, bare(options, tasks, args.concurrency))),
                ]
                for name, fn in order if r % 2 == 0 else order[::-1]:
                    seconds, result = timed(fn)
                    (harness_times if name == "harness" else bare_times).append(seconds)
                    if name == "harness":
                        by_id = {t["id"]: t for t in tasks}
                        successes = sum(
                            bool(score_run(row, by_id[row["task_id"]])["success"]) for row in result
                        )
                    else:
                        bare_ok = sum(1 for row in result if row["headline"])
                    print(
                        f"round {r + 1} {name:7s} {seconds:6.2f}s "
                        f"({seconds / len(tasks) * 1000:.0f} ms/task)"
                    )

    h, b = statistics.median(harness_times), statistics.median(bare_times)
    print(
        json.dumps(
            {
                "tasks": len(tasks),
                "rounds": args.rounds,
                "screenshot": not args.no_screenshot,
                "concurrency": args.concurrency,
                "harness_median_s": round(h, 3),
                "bare_median_s": round(b, 3),
                "harness_successes": successes,
                "bare_headlines_found": bare_ok,
            }
        )
    )
    print(f"ratio harness/bare: {h / b:.2f}")


if __name__ == "__main__":
    main()
