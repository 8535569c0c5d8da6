"""Harness overhead: the same N tasks through the Newsbench runner (reference agent, request
guard, its own observations and probes) and through a bare Playwright script doing the same
navigation and extraction, in one process, against a frozen newsroom; then what each artifact
kind costs on top, and tasks per minute at several pool sizes, for the reference agent and for
the same agent waiting `--think` seconds before every step (a model's pace).

Every configuration runs once per round; rounds alternate the order so drift in machine load
hits all of them; medians are compared. The last line printed is the ratio of the harness with
artifacts off over bare Playwright (goal <= 1.15): the median over rounds of each round's ratio.

    uv run python benchmarks/overhead.py [--tasks 24] [--rounds 3] [--pools 1,2,4] [--json]
    uv run python benchmarks/overhead.py --quick   # bare vs artifacts off: 16 tasks, 7 rounds
    uv run python benchmarks/overhead.py --smoke   # 1 task, 1 round, 1 kind, pool 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections import defaultdict
from functools import partial
from itertools import zip_longest
from urllib.parse import urljoin

from common import (
    FROZEN_AT,
    frozen_newsroom,
    parse_args,
    polled_tasks,
    reference_agent,
    sites,
    thinking_agent,
)
from playwright.async_api import async_playwright

from newsbench_dagster.core.agents.adapters.reference import first_listed_url
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.harness.build import build_runner
from newsbench_dagster.core.harness.settings import ARTIFACT_KINDS, RunSettings
from newsbench_dagster.core.reading.metadata import DOM_READ_JS, parse_jsonld
from newsbench_dagster.core.reading.page import understand
from newsbench_dagster.core.scoring.score import score_run
from newsbench_dagster.core.web.network import World
from newsbench_dagster.core.web.sites import SiteRegistry

LEAD_LINK = "main :is(h1, h2, h3) a[href]"
# The intents whose tasks the overhead is measured on.
INTENTS = ("find_top_headline", "extract_article_metadata")


def make_task_list(registry: SiteRegistry, world: World, n: int) -> list[dict]:
    tasks = polled_tasks(registry, world, FROZEN_AT.date(), INTENTS, articles=n)
    # Both intents, alternating (every front page has one lead task), sites interleaved.
    tasks.sort(key=lambda t: (t["seed"] % 97, t["id"]))
    by_intent = [[t for t in tasks if t["intent"] == i] for i in INTENTS]
    mixed = [t for pair in zip_longest(*by_intent) for t in pair if t is not None]
    return mixed[:n]


async def bare(options: BrowserOptions, tasks: list[dict], concurrency: int) -> list[dict]:
    """What a team would write without a harness, doing the reference agent's own work with
    the same calls: for the lead, read the front page (its ItemList, else the first heading
    link) and open the article; then read the article as `read_page` does (one evaluation of
    metadata and document, the document understood by core.reading). No observation, no
    probes, no request guard, no artifacts, no scoring."""
    sem = asyncio.Semaphore(concurrency)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(**options.launch_kwargs())

        async def one(task: dict) -> dict:
            async with sem:
                context = await browser.new_context(**options.context_kwargs())
                page = await context.new_page()
                await page.goto(task["entry_url"], wait_until="domcontentloaded")
                if task["intent"] == "find_top_headline":
                    raw = await page.evaluate(DOM_READ_JS)
                    nodes, _ = parse_jsonld(raw["jsonld"])
                    url = first_listed_url(nodes) or await page.locator(
                        LEAD_LINK
                    ).first.get_attribute("href")
                    await page.goto(urljoin(page.url, url), wait_until="domcontentloaded")
                raw = await page.evaluate(DOM_READ_JS)
                record = understand(raw["html"], url=raw["url"])
                await context.close()
                return {"task_id": task["id"], "headline": record.headline}

        out = await asyncio.gather(*(one(t) for t in tasks))
        await browser.close()
    return out


def timed(fn):
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def configs(pools: list[int], kinds: list[str], quick: bool) -> list[tuple[str, dict]]:
    """(name, RunSettings kwargs) of every harness configuration measured; "bare" is the
    baseline. Pacing is off throughout: it is the sites' politeness, not harness cost."""
    out = [("off", {"artifacts": (), "concurrency": 1})]
    if quick:
        return out
    # Without the oracle's own page loads (probes): what the harness's mechanics cost alone.
    out += [("noprobe", {"artifacts": (), "concurrency": 1, "probes": False})]
    out += [(kind, {"artifacts": (kind,), "concurrency": 1}) for kind in kinds]
    out += [("all", {"concurrency": 1})]
    out += [(f"pool{n}", {"concurrency": n}) for n in pools]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pools", default="1,2,4", help="pool sizes for tasks per minute")
    ap.add_argument("--kinds", default=",".join(ARTIFACT_KINDS), help="artifact kinds alone")
    ap.add_argument(
        "--think", type=float, default=2.0, help="seconds the thinking agent waits per step"
    )
    ap.add_argument("--think-tasks", type=int, default=8, help="tasks per thinking-agent pool")
    ap.add_argument(
        "--quick", action="store_true", help="bare vs harness (artifacts off) only: ~1.5 min"
    )
    ap.add_argument("--json", action="store_true", help="print only the JSON summary")
    args = parse_args(ap, tasks=1, rounds=1, pools="1", kinds="screenshot", think=0.05)
    if args.quick and not args.smoke:
        args.tasks, args.rounds = 16, 7
    pools = [int(n) for n in args.pools.split(",") if n]
    kinds = [k for k in args.kinds.split(",") if k]
    if unknown := set(kinds) - set(ARTIFACT_KINDS):
        ap.error(f"unknown artifact kind(s): {', '.join(sorted(unknown))}")

    times: dict[str, list[float]] = defaultdict(list)
    ok: dict[str, int] = {}
    registry = sites()
    with frozen_newsroom() as (_, world):
        options = BrowserOptions(routing=world.routing)
        tasks = make_task_list(registry, world, args.tasks)
        by_id = {t["id"]: t for t in tasks}
        agent = reference_agent()

        def harness(settings: dict, agents: list, batch: list[dict], tmp: str):
            runner = build_runner(
                agents,
                world=world,
                store=LocalArtifactStore(tmp),
                registry=registry,
                settings=RunSettings(pace=False, **settings),
            )
            return partial(asyncio.run, runner.run(batch, FROZEN_AT.date()))

        def report(name: str, seconds: float, n: int, r: int) -> None:
            if not args.json:
                print(
                    f"round {r + 1} {name:10s} {seconds:6.2f}s "
                    f"({seconds / n * 1000:.0f} ms/task, ok {ok[name]}/{n})",
                    flush=True,
                )

        plan = [("bare", None), *configs(pools, kinds, args.quick)]
        for r in range(args.rounds):
            # Alternate the order each round so drift in machine load hits every config alike.
            for name, kwargs in plan if r % 2 == 0 else plan[::-1]:
                with tempfile.TemporaryDirectory() as tmp:
                    if kwargs is None:
                        fn = partial(asyncio.run, bare(options, tasks, 1))
                    else:
                        fn = harness(kwargs, [agent], tasks, tmp)
                    seconds, result = timed(fn)
                times[name].append(seconds)
                if kwargs is None:
                    ok[name] = sum(1 for row in result if row["headline"])
                else:
                    ok[name] = sum(
                        bool(score_run(row, by_id[row["task_id"]])["success"]) for row in result
                    )
                report(name, seconds, len(tasks), r)
        # An agent that mostly waits (a model's think time): one round per pool size.
        thinking = [] if args.quick else tasks[: args.think_tasks]
        for p in pools if thinking else []:
            name = f"think_pool{p}"
            with tempfile.TemporaryDirectory() as tmp:
                fn = harness({"concurrency": p}, [thinking_agent(args.think)], thinking, tmp)
                seconds, result = timed(fn)
            times[name].append(seconds)
            ok[name] = sum(bool(score_run(row, by_id[row["task_id"]])["success"]) for row in result)
            report(name, seconds, len(thinking), 0)

    med = {name: statistics.median(v) for name, v in times.items()}
    paired = [o / b for o, b in zip(times["off"], times["bare"], strict=True)]
    n = len(tasks)
    summary = {
        "tasks": n,
        "rounds": args.rounds,
        "ms_per_task": {k: round(v / n * 1000, 1) for k, v in med.items() if "think" not in k},
        "ok": ok,
        # The goal: harness with artifacts off / bare Playwright doing the same work <= 1.15,
        # as the median of each round's ratio (the two ran back to back, so a round's machine
        # load hits both); the ratio of the medians is kept beside it.
        "ratio_off_over_bare": round(statistics.median(paired), 3),
        "ratio_of_medians_off_over_bare": round(med["off"] / med["bare"], 3),
        "rounds_off_over_bare": [round(r, 3) for r in paired],
    }
    if not args.quick:
        summary |= {
            "ratio_all_over_bare": round(med["all"] / med["bare"], 3),
            # The same, without the probes the oracle loads itself (not the agent's work).
            "ratio_noprobe_over_bare": round(med["noprobe"] / med["bare"], 3),
            "probe_cost_ms_per_task": round((med["off"] - med["noprobe"]) / n * 1000, 1),
            # What each artifact kind adds, per task, over the harness with artifacts off.
            "artifact_cost_ms_per_task": {
                k: round((med[k] - med["off"]) / n * 1000, 1) for k in kinds
            },
            "tasks_per_minute": {f"pool{p}": round(n / med[f"pool{p}"] * 60, 1) for p in pools},
        }
        if thinking:
            summary["thinking_agent"] = {
                "think_s_per_step": args.think,
                "tasks": len(thinking),
                "tasks_per_minute": {
                    f"pool{p}": round(len(thinking) / med[f"think_pool{p}"] * 60, 1) for p in pools
                },
            }
    print(json.dumps(summary, indent=None if args.json else 1))
    print(f"ratio harness(artifacts off)/bare: {summary['ratio_off_over_bare']:.2f}")


if __name__ == "__main__":
    main()
