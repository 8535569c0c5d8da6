"""Scale-out on one machine: the nightly job (every site's feed -> tasks -> runs -> scores ->
drift, then the day's KPI rollup) with one worker, then with two, as `newsbench demo` and
`backfill --workers N` run it (`cli.pipeline.materialize`: one Dagster run per site, each in a
worker process, browser steps claiming the instance's `browser` concurrency pool, the DuckDB
file taken in turns). Same frozen newsroom, same day, a fresh instance, warehouse and artifact
folder per configuration.

The agent is the reference agent at a model's pace (`params.think_s`, 1 s before every tool
call): a run is mostly waiting, as a model agent's is, so the second worker has something to
overlap. It prints each configuration's wall time, runs per minute and row counts, whether
the parallel KPIs equal the serial ones, and last
`scale-out: 2 workers speedup S, duplicates D, lost L`. `--check` exits 1 unless S >= 1.3 and
D = L = 0. Duplicates: rows sharing their table's key; lost: runs the tasks call for (tasks x
main agents x trials) missing from `agent_runs` or `run_scores`, and tasks or KPI rows the
serial configuration has and the other lacks.

    uv run python benchmarks/scale_out.py --check      # six sites, about 4 min on 2 cores
    uv run python benchmarks/scale_out.py --workers 3 --think 2
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import duckdb
import yaml
from common import FROZEN_AT, SEED, frozen_newsroom, parse_args

from newsbench_dagster.cli.pipeline import materialize
from newsbench_dagster.defs.partitions import SITE_KEYS

# The concurrency pool every browser step claims: two browsers at once on this machine.
INSTANCE_YAML = "concurrency:\n  pools:\n    default_limit: {pool}\ntelemetry:\n  enabled: false\n"
# Each table's key: a second row with the same key is a duplicate.
KEYS = {
    "news_tasks": "task_id",
    "agent_runs": "run_id",
    "run_scores": "run_id",
    "kpi_daily": "site, agent_version, slice_kind, slice_value",
}


def query(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def evaluate(workers: int, args: argparse.Namespace, port: int, tmp: Path) -> dict:
    """One configuration: the day's nightly job for every site with `workers` workers, in its
    own Dagster instance, warehouse and artifact folder. Returns its figures."""
    home, agents = tmp / f"home-{workers}", tmp / f"agents-{workers}"
    home.mkdir()
    agents.mkdir()
    (home / "dagster.yaml").write_text(INSTANCE_YAML.format(pool=args.browser_pool))
    manifest = {
        "name": "reference",
        "version": f"think{args.think:g}",
        "adapter": "reference",
        "channel": "main",
        "params": {"think_s": args.think},
    }
    (agents / "reference.yaml").write_text(yaml.safe_dump(manifest))
    db = tmp / f"warehouse-{workers}.duckdb"
    resources = {
        "io_manager": {"database": str(db)},
        "newsroom": {"seed": SEED},
        "artifacts": {"root": str(tmp / f"artifacts-{workers}")},
        "agents": {"directory": str(agents)},
        "tasks": {"intents": args.intents, "articles_per_site": args.articles},
        "browser": {"trials": args.trials, "concurrency": args.concurrency},
    }
    # The worker processes are spawned: they read the instance from the environment.
    os.environ["DAGSTER_HOME"] = str(home)
    started = time.perf_counter()
    ok = materialize(
        [FROZEN_AT.date()],
        args.sites,
        port,
        workers=workers,
        resources=resources,
        log_path=tmp / f"materialize-{workers}.log",
    )
    wall = time.perf_counter() - started
    counts = {
        table: query(db, f"SELECT count(*), count(DISTINCT ({key})) FROM newsbench.{table}")[0]
        for table, key in KEYS.items()
    }
    # The day's tasks are run; the gate's reserve beside them never is.
    ((expected,),) = query(db, "SELECT count(*) FROM newsbench.news_tasks WHERE suite = 'live'")
    ((runs_kept,),) = query(
        db, "SELECT count(DISTINCT (task_id, agent_version, trial)) FROM newsbench.agent_runs"
    )
    ((unscored,),) = query(
        db,
        "SELECT count(*) FROM newsbench.agent_runs r "
        "ANTI JOIN newsbench.run_scores s ON s.run_id = r.run_id",
    )
    return {
        "workers": workers,
        "ok": ok,
        "wall": wall,
        "counts": counts,
        "runs": counts["agent_runs"][1],
        "missing_runs": max(0, expected * args.trials - runs_kept) + unscored,
        "tasks": set(query(db, "SELECT site, task_id FROM newsbench.news_tasks")),
        "kpis": sorted(
            query(
                db,
                "SELECT site, agent_version, slice_kind, slice_value, n_scored, successes, "
                "n_env_failures FROM newsbench.kpi_daily",
            )
        ),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sites", type=lambda s: s.split(","), default=list(SITE_KEYS))
    ap.add_argument("--workers", type=int, default=2, help="workers of the parallel configuration")
    ap.add_argument("--think", type=float, default=1.0, help="seconds the agent waits per step")
    ap.add_argument(
        "--intents",
        type=lambda s: s.split(","),
        default=["find_top_headline", "extract_article_metadata", "find_corrections"],
        help="intents of each site's task set (comma-separated)",
    )
    ap.add_argument("--articles", type=int, default=2, help="metadata tasks per site")
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--concurrency", type=int, default=2, help="browser contexts per run")
    ap.add_argument("--browser-pool", type=int, default=2, help="browser steps at once")
    ap.add_argument("--check", action="store_true", help="exit 1 unless S >= 1.3, D = L = 0")
    # The smoke runs one site: the code path end to end; two sites at once are proven by
    # tests/cli/test_cli_parallel_partitions.py, with a barrier.
    args = parse_args(
        ap, sites=list(SITE_KEYS[:1]), intents=["find_top_headline"], think=0.05, articles=1
    )
    unknown = sorted(set(args.sites) - set(SITE_KEYS))
    if unknown:
        ap.error(f"--sites: unknown {unknown} (allowlist: {', '.join(SITE_KEYS)})")

    print(
        f"{len(args.sites)} sites, intents {', '.join(args.intents)}, agent waiting "
        f"{args.think:g} s per step, {args.trials} trial(s), newsroom frozen at "
        f"{FROZEN_AT.isoformat()}",
        flush=True,
    )
    began = datetime.now()
    with tempfile.TemporaryDirectory(prefix="scale-out-") as tmp, frozen_newsroom() as (server, _):
        # Every run reaches the newsroom this process serves, frozen, on its port.
        results = [evaluate(n, args, server.port, Path(tmp)) for n in (1, args.workers)]

    serial, parallel = results
    print(f"\n{'workers':>7} {'wall s':>7} {'runs':>5} {'runs/min':>8}  rows (total/distinct)")
    for r in results:
        rows = ", ".join(f"{t} {n}/{d}" for t, (n, d) in r["counts"].items())
        print(
            f"{r['workers']:>7} {r['wall']:>7.1f} {r['runs']:>5} "
            f"{r['runs'] / r['wall'] * 60:>8.1f}  {rows}{'' if r['ok'] else '  FAILED RUNS'}"
        )
    duplicates = sum(n - d for r in results for n, d in r["counts"].values())
    lost = (
        sum(r["missing_runs"] for r in results)
        + len(serial["tasks"] - parallel["tasks"])
        + len(set(serial["kpis"]) - set(parallel["kpis"]))
    )
    same = serial["kpis"] == parallel["kpis"] and serial["tasks"] == parallel["tasks"]
    print(f"tasks and kpi_daily equal to the serial run's: {'yes' if same else 'NO'}")
    print(f"elapsed: {(datetime.now() - began).total_seconds():.0f} s")
    speedup = serial["wall"] / parallel["wall"]
    print(
        f"scale-out: {args.workers} workers speedup {speedup:.2f}, "
        f"duplicates {duplicates}, lost {lost}"
    )
    failed = not all(r["ok"] for r in results) or duplicates or lost
    if args.check and (failed or speedup < 1.3):
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
