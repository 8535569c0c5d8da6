"""`newsbench report`: the static HTML report of a day from the warehouse (and `--demo`: evaluate
the embedded default for the day first, then report)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Annotated

import typer

from newsbench_dagster.cli.common import (
    DEFAULT_PORT,
    PortOption,
    err,
    fail,
    progress,
    registry,
    running_newsroom,
    today,
)
from newsbench_dagster.paths import ARTIFACTS_DIR, DATA_DIR, WAREHOUSE_FILE


def report(
    day: Annotated[str | None, typer.Option(help="Day, YYYY-MM-DD (default: today, UTC).")] = None,
    site: Annotated[str | None, typer.Option(help="One site (default: all sites).")] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Folder to write into (default: data/reports/DAY[-SITE]/)."),
    ] = None,
    demo: Annotated[
        bool,
        typer.Option(
            "--demo",
            help="First evaluate every site of the embedded default for the day (as "
            "`newsbench demo --no-ui`), then report.",
        ),
    ] = False,
    warehouse: Annotated[
        Path, typer.Option(help="The DuckDB warehouse to read (and, with --demo, write).")
    ] = WAREHOUSE_FILE,
    artifacts: Annotated[
        Path, typer.Option(help="With --demo: where the runs' artifacts go.")
    ] = ARTIFACTS_DIR,
    port: PortOption = DEFAULT_PORT,
) -> None:
    """Write a self-contained HTML report of a day: KPIs with intervals, success over days,
    failure taxonomy, drift, safety incidents, release decisions, error clusters, and one page
    per run (prompt, answer, verdicts, reward, screenshot, page, requests, trace).

    Open DIR/index.html in any browser: no server, nothing fetched.
    """
    from newsbench_dagster.core.analytics.warehouse import WarehouseError
    from newsbench_dagster.core.report import data, pages

    try:
        the_day = date.fromisoformat(day) if day else today()
    except ValueError:
        fail(f"--day {day!r} is not a date (YYYY-MM-DD)", 2)
    # The allowlist file, not the Dagster partitions built from it: no dagster import here.
    site_keys = registry().keys
    if site is not None and site not in site_keys:
        fail(f"--site {site!r} is not on the allowlist ({', '.join(site_keys)})", 2)
    if demo:
        from newsbench_dagster.cli.pipeline import materialize

        # The Dagster runs write where this command reads (the project's files by default).
        resources = {
            "io_manager": {"database": str(warehouse.resolve())},
            "artifacts": {"root": str(artifacts.resolve())},
        }
        sites = [site] if site else site_keys
        with running_newsroom(port):
            if not materialize([the_day], sites, port, workers=2, resources=resources):
                err.print("[yellow]some partitions failed: the report shows what was stored[/]")
    out = out or DATA_DIR / "reports" / (f"{the_day}-{site}" if site else str(the_day))
    try:
        rows = data.from_warehouse(warehouse, the_day, site)
    except WarehouseError as e:
        fail(str(e))
    with progress() as bar:
        task = bar.add_task("run pages", total=len(rows.scores))
        index = pages.write(rows, out, lambda n, total: bar.update(task, completed=n))
    err.print(f"{len(rows.scores)} runs reported")
    print(index.resolve().as_uri())
