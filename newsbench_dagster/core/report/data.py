"""What a report of a day shows, as rows (`tables.records` form), and reading it from the
local warehouse. The `daily_report` asset builds the same object from its inputs, so the CLI
and Dagster render one thing."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path

from newsbench_dagster.core.analytics import warehouse
from newsbench_dagster.core.analytics.warehouse import WarehouseError

HISTORY_DAYS = 30  # how far back the over-days charts look
DECISIONS = 10  # the latest release decisions shown


@dataclass
class ReportData:
    day: date
    site: str | None  # one site, or None for all
    kpis: list[dict]  # kpi_daily of the day, every slice
    history: list[dict]  # kpi_daily `all` slices of the HISTORY_DAYS up to the day
    scores: list[dict]  # run_scores of the day
    runs: list[dict]  # agent_runs of the day
    tasks: list[dict] = field(default_factory=list)  # news_tasks of the day
    drift: list[dict] = field(default_factory=list)  # site_drift up to the day
    # Newest release decisions first; None when this report was not given them.
    decisions: list[dict] | None = field(default_factory=list)
    source: str = ""  # where the rows came from, shown on the report

    def __post_init__(self) -> None:
        if self.site is not None:  # a site's report keeps the `*` KPI rows: the overall line
            keep = {self.site, "*"}
            self.kpis = [r for r in self.kpis if r["site"] in keep]
            self.history = [r for r in self.history if r["site"] in keep]
            for name in ("scores", "runs", "tasks", "drift"):
                setattr(self, name, [r for r in getattr(self, name) if r["site"] == self.site])


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day)


def from_warehouse(database: str | Path, day: date, site: str | None = None) -> ReportData:
    """The day's rows from the DuckDB warehouse, read in one turn; a day with no scored runs
    is an error that says so (a report of nothing would look like a quiet day)."""
    database = Path(database)
    start, end = _midnight(day), _midnight(day + timedelta(days=1))
    first = _midnight(day - timedelta(days=HISTORY_DAYS))
    with warehouse.reading(database) as con:

        def rows(table: str, where: str, params: list) -> list[dict]:
            return warehouse.query_rows(con, table, where, params, database)

        def optional(table: str, where: str, params: list) -> list[dict]:
            # Tables a fresh warehouse may not have yet (no drift check ran, no gate decided).
            try:
                return rows(table, where, params)
            except WarehouseError:
                return []

        report = ReportData(
            day=day,
            site=site,
            kpis=optional("kpi_daily", "day = ?", [start]),
            history=optional(
                "kpi_daily", "day >= ? AND day <= ? AND slice_kind = 'all'", [first, start]
            ),
            scores=rows("run_scores", "day = ?", [start]),
            runs=rows("agent_runs", "day = ?", [start]),
            tasks=optional("news_tasks", "day = ?", [start]),
            drift=optional("site_drift", "day >= ? AND day <= ?", [first, start]),
            decisions=optional(
                "release_decision",
                "decided_at < ? ORDER BY decided_at DESC LIMIT ?",
                [end, DECISIONS],
            ),
            source=str(database),
        )
        if not report.scores:
            sites = [s for (s,) in con.execute(
                f"SELECT DISTINCT site FROM {warehouse.SCHEMA}.run_scores ORDER BY site"
            ).fetchall()]  # fmt: skip
    if not report.scores:
        what = f"site {site!r} on {day}" if site else str(day)
        raise WarehouseError(
            f"{database}: no scored runs for {what} (sites with runs on any day: "
            f"{', '.join(sites) or 'none'}); evaluate it first (`newsbench demo`, "
            "`newsbench backfill`) or use `newsbench report --demo`"
        )
    return report
