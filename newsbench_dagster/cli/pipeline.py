"""The pipeline from the shell: `newsbench demo` (the main job on the embedded default, then
the Dagster UI), `newsbench backfill` (sites over a range of days) and `newsbench kpis` (a
day's KPI table from the warehouse). Runs go through Dagster and are recorded in the local
instance, so the UI shows them."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from newsbench_dagster.cli.common import (
    DEFAULT_PORT,
    AtOption,
    PortOption,
    StepLog,
    console,
    day_arg,
    day_of,
    err,
    fail,
    instant,
    past_or_today,
    progress,
    registry,
    running_newsroom,
    today,
)
from newsbench_dagster.core.errors import NewsbenchError
from newsbench_dagster.paths import DAGSTER_HOME, LOG_DIR, PROJECT_ROOT, WAREHOUSE_FILE


def materialize(
    days: list[date],
    sites: list[str],
    port: int,
    *,
    with_kpis: bool = True,
    workers: int = 1,
    resources: dict | None = None,
    log_path: Path = LOG_DIR / "materialize.log",
) -> bool:
    """One Dagster run per site and day (recorded in the local instance, so the UI shows
    them), `workers` at a time (`cli.fanout`; never more workers than sites), then each day's
    KPI rollup once its sites are done; `resources` overrides resource config. Returns whether
    every run succeeded."""
    from newsbench_dagster.cli import fanout
    from newsbench_dagster.run_health import fail_dead_runs

    ok = True
    config = fanout.run_config(port, resources)
    log = StepLog(log_path)
    err.print(f"progress is logged to {log.path}")
    # Runs of an earlier command that was killed still say STARTED and hold browser slots.
    dead = fail_dead_runs(fanout.instance())
    if dead:
        err.print(f"marked {len(dead)} killed run(s) failed: {', '.join(dead)}", highlight=False)
        log.line(f"marked failed, their process gone: {', '.join(dead)}")
    # A day's site runs go at once, its KPI rollup after them: more workers than sites would
    # only import everything to idle (one site runs here, in this process).
    with progress() as bar, fanout.workers(min(workers, len(sites))) as pool:
        steps = bar.add_task("evaluating", total=len(days) * (len(sites) + int(with_kpis)))

        def done(partition: fanout.Partition, success: bool, run_id: str | None) -> None:
            if not success:
                err.print(
                    f"[red]{partition.what} failed[/] (run {run_id}); "
                    "see the Dagster UI for the step that failed"
                )
            elif not err.is_terminal:  # a log: which step ended, not only how many
                err.print(f"{partition.what}: ok (run {run_id})", highlight=False)
            bar.advance(steps)

        for day in days:
            bar.update(steps, description=f"{day}: {', '.join(sites)}")
            runs = [
                fanout.Partition(
                    "site_day_job",
                    {"site": site, "day": day.isoformat()},
                    f"{day} {site}: feed → tasks → runs → scores",
                )
                for site in sites
            ]
            ok = fanout.run_all(pool, runs, config, log.path, done) and ok
            if with_kpis:
                bar.update(steps, description=f"{day}: KPI rollup")
                rollup = fanout.Partition("kpi_job", day.isoformat(), f"{day}: KPI rollup")
                ok = fanout.run_all(pool, [rollup], config, log.path, done) and ok
    log.line(f"all done: {'ok' if ok else 'FAILED'}")
    return ok


def print_kpis(day: date, database: Path = WAREHOUSE_FILE) -> None:
    from newsbench_dagster.core.analytics.warehouse import kpi_overall

    if not database.exists():
        fail(f"{database}: no warehouse yet; run `newsbench demo` first")
    try:
        rows = kpi_overall(database, day)  # from the snapshot: never waits for a run's write
    except NewsbenchError as e:  # no such table yet, a warehouse held by another program
        fail(str(e))
    table = Table(title=f"Newsbench KPIs for {day}")
    columns = (
        "site",
        "agent",
        "scored",
        "success [95% CI]",
        "reward",
        "TTFC p50/p95 s",
        "env fail",
        "void",
        "tasks",
    )
    for col in columns:
        right = col not in ("site", "agent")
        table.add_column(col, justify="right" if right else "left", no_wrap=True)

    def f(v, fmt="{:.2f}"):
        return "-" if v is None else fmt.format(v)

    for r in rows:
        n = r["n_scored"]
        table.add_row(
            "all sites" if r["site"] == "*" else r["site"],
            r["agent_version"],
            str(n),
            f"{r['successes']}/{n} = {f(r['success_rate'])} "
            f"[{f(r['success_ci_low'])}, {f(r['success_ci_high'])}]"
            if n
            else "-",
            f(r["mean_reward"], "{:.3f}"),
            f"{f(r['ttfc_p50'])} / {f(r['ttfc_p95'])}",
            str(r["n_env_failures"]),
            f(r.get("n_void"), "{:d}"),
            f"{r['tasks_run']} / {r['tasks_generated']}",
        )
    console.print(table)
    if not rows:
        err.print(f"no KPI rows for {day}")


def _serve_ui() -> None:
    """Run `dagster dev` until Ctrl-C or SIGTERM, then stop it and everything it started."""
    import signal

    env = {**os.environ, "DAGSTER_HOME": str(DAGSTER_HOME)}
    # Its own process group, so shutting down reaches the webserver and daemon too.
    proc = subprocess.Popen(
        [sys.executable, "-m", "dagster", "dev", "-w", "workspace.yaml"],
        cwd=PROJECT_ROOT,
        env=env,
        start_new_session=True,
    )

    def on_term(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        proc.wait()
    except KeyboardInterrupt:
        err.print("stopping the Dagster UI")
        for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=grace)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
    finally:
        signal.signal(signal.SIGTERM, previous)


WorkersOption = Annotated[
    int,
    typer.Option(
        min=1,
        help="Partitions evaluated at once, each a Dagster run in its own worker process "
        "(1: one after the other, in this process).",
    ),
]


def demo(
    no_ui: Annotated[
        bool,
        typer.Option(
            "--no-ui", envvar="NEWSBENCH_NO_UI", help="Do not start the Dagster UI afterwards."
        ),
    ] = False,
    day: Annotated[str | None, typer.Option(help="Day to evaluate (default: today, UTC).")] = None,
    port: PortOption = DEFAULT_PORT,
    at: AtOption = None,
    workers: WorkersOption = 2,
) -> None:
    """Evaluate every site for a day, print the KPI table, open the Dagster UI.

    Starts the newsroom, runs one Dagster run per site (feed -> tasks -> runs -> scores) and
    the day's KPI rollup, prints the KPI table, then serves the UI unless --no-ui. With --at
    the newsroom is frozen at that instant (and the day is its date unless --day says).
    """
    frozen = instant(at)
    # The day partitions end today: a later day would fail each run a minute in.
    the_day = past_or_today(day_arg(day) if day else day_of(frozen), "--day" if day else "--at")
    sites = registry().keys  # exit 1 naming a broken sites.yaml (file:line)
    started = datetime.now()
    with running_newsroom(port, frozen):
        ok = materialize([the_day], sites, port, workers=workers)
        print_kpis(the_day)
        err.print(f"done in {(datetime.now() - started).total_seconds():.1f}s")
        if not ok:
            raise typer.Exit(1)
        if not no_ui:
            err.print("starting the Dagster UI on http://127.0.0.1:3000 (Ctrl-C to stop)")
            _serve_ui()


def backfill(
    site: Annotated[list[str], typer.Option(help="Site key (repeatable).")],
    start: Annotated[str, typer.Option(help="First day, YYYY-MM-DD.")],
    end: Annotated[str, typer.Option(help="Last day, YYYY-MM-DD (inclusive).")],
    port: PortOption = DEFAULT_PORT,
    workers: WorkersOption = 2,
) -> None:
    """Evaluate sites over a range of days (one Dagster run per site and day).

    Then each day's KPIs. Live sites can only be read as they are now: a past day is
    re-evaluated against the current pages and recorded under that day.
    """
    keys = registry().keys  # exit 1 naming a broken sites.yaml (file:line)
    unknown = [s for s in site if s not in keys]
    if unknown:
        fail(f"unknown site(s): {', '.join(unknown)} (allowlist: {', '.join(keys)})")
    first, last = day_arg(start, "--start"), day_arg(end, "--end")
    if last < first:
        fail(f"--end {end} is before --start {start}")
    past_or_today(last, "--end")  # refused up front, not after a minute of runs
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    with running_newsroom(port):
        ok = materialize(days, site, port, workers=workers)
    for d in days:
        print_kpis(d)
    if not ok:
        raise typer.Exit(1)


def kpis(
    day: Annotated[str | None, typer.Option(help="Day (default: today, UTC).")] = None,
    warehouse: Annotated[
        Path, typer.Option(help="The DuckDB warehouse (its read snapshot is what is read).")
    ] = WAREHOUSE_FILE,
) -> None:
    """Print the KPI table of a day from the warehouse."""
    print_kpis(day_arg(day) if day else today(), warehouse)
