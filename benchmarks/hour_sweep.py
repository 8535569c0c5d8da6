"""Hour sweep: is any agent failed by the clock? The reference agent (the witness, right on
every task the newsroom can pose) runs every site and intent at N instants spread over D days,
with the newsroom frozen at each: tasks are polled and made at the instant, run and scored
there. The instants include the opening of each site's live blog (the blog exists but has no
entry yet) and a few minutes later, where a clock-made failure would show first.

A failure of the reference agent here is the harness's or the producer's, never the agent's:
a task whose answer did not exist, an oracle reading the page wrongly at some hour. A void run
(no answer at the run's instant) should not happen either: the producer must not make the
task. Prints the failures and voids by site, intent and hour, and as its last line
`hour sweep: runs R, reference failures F, void V`; with --check it exits 1 unless F = 0 and
V <= 1 % of R. Each run's reward is reported too, with its freshness measured at the frozen
instant (core.scoring.world_clock): `--same-as` an earlier sweep's --json checks that the
clock-dependent parts (accuracy, freshness) did not move, whatever day each sweep ran. Only the
ttfc part may differ between two sweeps: it is the agent's own speed, in seconds.

    uv run python benchmarks/hour_sweep.py [--days 3] [--instants 8] [--start 2026-11-30]
                                           [--concurrency 2] [--check] [--json FILE]
                                           [--same-as EARLIER.json]
    uv run python benchmarks/hour_sweep.py --smoke   # one instant, one site
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from common import (
    SEED,
    frozen_newsroom,
    move_to,
    parse_args,
    polled_tasks,
    reference_agent,
    run_tasks,
)
from common import sites as load_registry

from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.scoring.failures import VOID
from newsbench_dagster.core.scoring.score import score_safely
from newsbench_dagster.core.tasks.intents import ALL_INTENTS
from newsbench_dagster.newsroom.world import Newsroom

# Void runs allowed, as a share of all runs (voids are the exception: see the module doc).
MAX_VOID_SHARE = 0.01
# Each live blog's first hour is swept at its opening (the blog is up, with only its pinned
# post) and this much later (the first entry comes 6-15 minutes after the opening).
AFTER_OPENING = (timedelta(0), timedelta(minutes=10))


def instants(start: date, days: int, n: int, keys: list[str]) -> dict[datetime, list[str]]:
    """instant -> the sites swept there: `n` instants spread evenly over `days` days from
    `start` (each shifted by a few odd minutes so they do not all fall on the hour) with every
    site, plus, on the first day, each live blog's first hour (AFTER_OPENING) with the sites
    whose blog opens then."""
    world = Newsroom(seed=SEED)
    t0 = datetime(start.year, start.month, start.day, tzinfo=UTC)
    step = timedelta(days=days) / max(n, 1)
    plan: dict[datetime, set[str]] = {
        t0 + i * step + timedelta(minutes=7 * i % 60): set(keys) for i in range(n)
    }
    for key in keys:
        opens = world.site(key).liveblog(start).started
        for after in AFTER_OPENING:
            plan.setdefault(opens + after, set()).add(key)
    return {at: [k for k in keys if k in plan[at]] for at in sorted(plan)}


def sweep(args: argparse.Namespace) -> dict:
    registry = load_registry()
    keys = args.site or list(registry.keys)
    plan = instants(args.start, args.days, args.instants, keys)
    if args.smoke:
        plan = dict(list(plan.items())[:1])
    agent = reference_agent("hour-sweep")
    settings = RunSettings(artifacts=(), screenshot=False, concurrency=args.concurrency)
    results: list[dict] = []
    started = time.monotonic()
    with frozen_newsroom(next(iter(plan))) as (server, _):
        for i, (at, at_keys) in enumerate(plan.items(), 1):
            world = move_to(server, at)
            tasks = polled_tasks(registry, world, at.date(), ALL_INTENTS, args.articles, at_keys)
            by_id = {t["id"]: t for t in tasks}
            rows = run_tasks(
                [agent], tasks, at.date(), world=world, registry=registry, settings=settings
            )
            for row in rows:
                score = score_safely(row, by_id.get(row["task_id"]))
                results.append(
                    {
                        "at": at.isoformat(),
                        "site": row["site"],
                        "intent": row["intent"],
                        "task_id": row["task_id"],
                        "outcome": _outcome(score),
                        "class": score["failure_class"],
                        "reason": (score.get("checker") or {}).get("reason"),
                        **_reward_of(score),
                    }
                )
            made = {(t["site"], t["intent"]) for t in tasks}
            missing = [f"{k}:{i}" for k in at_keys for i in ALL_INTENTS if (k, i) not in made]
            print(
                f"[{i}/{len(plan)}] {at:%Y-%m-%d %H:%M} UTC, {', '.join(at_keys)}: "
                f"{len(rows)} runs ({time.monotonic() - started:.0f} s)"
                + (f"; no task for {', '.join(missing)}" if missing else ""),
                file=sys.stderr,
                flush=True,
            )
    return {
        "instants": {a.isoformat(): k for a, k in plan.items()},
        "runs": results,
        "seconds": round(time.monotonic() - started, 1),
    }


def _reward_of(score: dict) -> dict:
    """The run's reward and its parts that depend on the world's clock (accuracy, freshness
    measured at the frozen instant) apart from the one that depends on the agent's speed
    (ttfc, seconds to the first correct answer)."""
    parts = (score.get("reward_components") or {}).get("timeliness") or {}
    return {
        "reward": score.get("reward"),
        "accuracy": score.get("accuracy"),
        "freshness": parts.get("freshness"),
        "age_minutes": parts.get("age_minutes"),
        "ttfc": parts.get("ttfc"),
    }


def same_world_parts(runs: list[dict], earlier: list[dict]) -> list[str]:
    """Where this sweep's clock-dependent reward parts differ from an earlier sweep's at the
    same instants: each (instant, site, intent, task) scored in both, named with both values."""
    before = {_key(r): r for r in earlier}
    out = []
    for r in runs:
        old = before.get(_key(r))
        if old is None:
            continue
        for part in ("accuracy", "freshness", "age_minutes"):
            if r.get(part) != old.get(part):
                out.append(f"{' '.join(_key(r))} {part}: {old.get(part)} then {r.get(part)}")
    return out


def _key(run: dict) -> tuple[str, str, str, str]:
    return run["at"], run["site"], run["intent"], run["task_id"]


def _mean(values: list) -> str:
    got = [v for v in values if v is not None]
    return f"{sum(got) / len(got):.4f}" if got else "-"


def _outcome(score: dict) -> str:
    if score["excluded"]:
        return "void" if score["failure_class"] == VOID else "env"
    return "pass" if score["success"] else "fail"


def report(summary: dict) -> tuple[int, int, int]:
    runs = summary["runs"]
    print(f"instants ({len(summary['instants'])}, UTC):")
    for at, keys in summary["instants"].items():
        print(f"  {datetime.fromisoformat(at):%Y-%m-%d %H:%M}  {', '.join(keys)}")
    print()
    print(
        f"{'instant (UTC)':<17} {'runs':>5} {'pass':>5} {'fail':>5} {'void':>5} {'env':>5} "
        f"{'reward':>7} {'fresh':>7}"
    )
    for at in summary["instants"]:
        here = [r for r in runs if r["at"] == at]
        c = Counter(r["outcome"] for r in here)
        print(
            f"{datetime.fromisoformat(at):%Y-%m-%d %H:%M} {sum(c.values()):>5} "
            f"{c['pass']:>5} {c['fail']:>5} {c['void']:>5} {c['env']:>5} "
            f"{_mean([r.get('reward') for r in here]):>7} "
            f"{_mean([r.get('freshness') for r in here]):>7}"
        )
    odd = [r for r in runs if r["outcome"] != "pass"]
    print()
    if odd:
        print("not passed, by site, intent and hour:")
        print(f"  {'instant (UTC)':<17} {'site':<10} {'intent':<25} {'outcome':<5} class: reason")
        for r in sorted(odd, key=lambda r: (r["site"], r["intent"], r["at"])):
            print(
                f"  {datetime.fromisoformat(r['at']):%Y-%m-%d %H:%M} {r['site']:<10} "
                f"{r['intent']:<25} {r['outcome']:<5} {r['class']}: {(r['reason'] or '')[:90]}"
            )
    else:
        print("not passed, by site, intent and hour: none")
    by = Counter(r["outcome"] for r in runs)
    print(f"environment failures (not the agent's, not gated here): {by['env']}")
    print(f"elapsed: {summary['seconds']:.0f} s")
    return len(runs), by["fail"], by["void"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=3, help="days the instants spread over")
    parser.add_argument(
        "--instants",
        type=int,
        default=5,
        help="instants spread evenly over the days (the live blogs' openings come on top)",
    )
    parser.add_argument(
        "--start",
        type=date.fromisoformat,
        default=date(2026, 11, 30),
        help="first day (YYYY-MM-DD)",
    )
    parser.add_argument("--site", action="append", default=[], help="site key (repeatable)")
    parser.add_argument(
        "--articles",
        type=int,
        default=1,
        help="extract_article_metadata tasks per site and instant",
    )
    parser.add_argument("--concurrency", type=int, default=2, help="browser contexts in flight")
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 unless no reference failure and voids <= 1 %% of runs",
    )
    parser.add_argument("--json", type=Path, help="write every run's outcome and reward here")
    parser.add_argument(
        "--same-as",
        type=Path,
        help="an earlier sweep's --json: its accuracy and freshness at the same instants must "
        "be this sweep's (with --check, exit 1 if not)",
    )
    args = parse_args(parser, days=1, instants=1, site=["harbor"])
    summary = sweep(args)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    runs, failures, void = report(summary)
    moved = []
    if args.same_as:
        earlier = json.loads(args.same_as.read_text(encoding="utf-8"))["runs"]
        moved = same_world_parts(summary["runs"], earlier)
        print(f"reward parts that moved since {args.same_as}: {len(moved)}")
        for line in moved:
            print(f"  {line}")
    print(f"hour sweep: runs {runs}, reference failures {failures}, void {void}")
    ok = runs > 0 and failures == 0 and void <= MAX_VOID_SHARE * runs and not moved
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
