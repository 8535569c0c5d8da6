"""The day's static HTML report (`core.report`), written to the artifact store under
`reports/{day}/` and linked from the asset's page, with its charts inline in the metadata."""

import tempfile
from pathlib import Path

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, MaterializeResult, MetadataValue

from newsbench_dagster.core.analytics.tables import records
from newsbench_dagster.core.report import charts, data, pages
from newsbench_dagster.defs.kpis.assets import ALL_SITES_OF_DAY, FOLLOWS_ITS_DAY
from newsbench_dagster.defs.partitions import day_asset
from newsbench_dagster.resources import ArtifactStoreResource

_DAY = {"partition_mapping": ALL_SITES_OF_DAY}


@day_asset(
    ins={
        "run_scores": AssetIn(**_DAY),
        "agent_runs": AssetIn(**_DAY),
        "news_tasks": AssetIn(**_DAY),
        "site_drift": AssetIn(**_DAY),
        "kpi_daily": AssetIn(),
    },
    kinds={"python", "html"},
    automation_condition=FOLLOWS_ITS_DAY,
)
def daily_report(
    context: AssetExecutionContext,
    run_scores: pd.DataFrame,
    agent_runs: pd.DataFrame,
    news_tasks: pd.DataFrame,
    site_drift: pd.DataFrame,
    kpi_daily: pd.DataFrame,
    artifacts: ArtifactStoreResource,
) -> MaterializeResult:
    """KPIs with intervals, the failure taxonomy, drift, safety incidents, error clusters and a
    page per run (prompt, answer, verdicts, reward, screenshot, requests, trace) as static
    HTML. Release decisions and the days before are in `newsbench report`, which reads the
    whole warehouse."""
    day = pd.Timestamp(context.partition_key).date()
    kpis = records(kpi_daily, "kpi_daily")
    report = data.ReportData(
        day=day,
        site=None,
        kpis=kpis,
        history=[k for k in kpis if k["slice_kind"] == "all"],
        scores=records(run_scores, "run_scores"),
        runs=records(agent_runs, "agent_runs"),
        tasks=records(news_tasks, "news_tasks"),
        drift=records(site_drift, "site_drift"),
        decisions=None,
        source=f"the Dagster run {context.run_id}",
    )
    store = artifacts.store()
    with tempfile.TemporaryDirectory() as tmp:
        index = pages.write(report, tmp)
        uris = {
            str(f.relative_to(tmp)): store.put(
                f"reports/{day}/{f.relative_to(tmp)}", f.read_bytes()
            )
            for f in sorted(Path(tmp).rglob("*"))
            if f.is_file()
        }
    index_uri = uris[index.name]
    context.log.info(f"report of {day}: {index_uri}")
    return MaterializeResult(
        metadata={
            "report": MetadataValue.url(index_uri),
            "runs": len(report.scores),
            "files": len(uris),
            "success_by_site": MetadataValue.md(
                charts.markdown_image(charts.success_by_site(kpis), "success by site")
            ),
            "failures_by_site": MetadataValue.md(
                charts.markdown_image(
                    charts.failure_taxonomy(report.scores, "site"), "failures by site"
                )
            ),
        }
    )
