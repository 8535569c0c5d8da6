"""The production warehouse against a BigQuery API emulator: the real site-day and KPI jobs
(real newsroom, real Chromium) write through the production BigQuery IO manager, with the real
google-cloud-bigquery client, to bqemulator on loopback (`tests/support/bigquery_emulator.py`);
then the analysts' SQL runs there, through the same client, with BigQuery query parameters.

What the emulator cannot show (README "Analysts: BigQuery"): it runs BigQuery SQL by
translating it to DuckDB with sqlglot, as the local route does; it does not record the
`PARTITION BY DATE(day)` and `CLUSTER BY` of a CREATE TABLE in the table's metadata (so the
statements are checked as sent and accepted, not as stored); no GEOGRAPHY; no Storage Read API.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from types import SimpleNamespace

import google.auth
import pandas as pd
import pytest
from dagster import MultiPartitionKey, instance_for_test, materialize
from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery

from newsbench_dagster import definitions
from newsbench_dagster.core.analytics import analyst_sql, tables
from newsbench_dagster.defs.partitions import candidate_asset
from newsbench_dagster.resources import ArtifactStoreResource, NewsroomResource, TaskSetResource
from newsbench_dagster.resources.bigquery import BigQueryWarehouse, normalize_loaded
from newsbench_dagster.resources.warehouse import DATASET
from tests.support.bigquery_emulator import PROJECT, bigquery_emulator
from tests.support.newsroom_clock import frozen_now
from tests.support.tasks import LEAD_AND_METADATA

pytestmark = pytest.mark.heavy(40)  # about 25 s; 40 s on two busy cores

SITE_TABLES = ("feed_items", "news_tasks", "agent_runs", "run_scores", "site_drift")
KEYS = {"news_tasks": "task_id", "agent_runs": "run_id", "run_scores": "run_id"}
# Types as BigQuery's tables.get names them, against the Standard SQL names of the DDL.
LEGACY = {"INTEGER": "INT64", "FLOAT": "FLOAT64", "BOOLEAN": "BOOL"}
# The emulator's catalog reports a JSON column of the DDL as STRING (DuckDB's JSON reaches it
# through Arrow as a string); the JSON values themselves are checked below.
EMULATOR_REPORTS = {"JSON": "STRING"}
KPI_KEY = ["day", "site", "agent_version"]
KPI_CORE = [
    *("n_runs", "n_scored", "n_env_failures", "successes", "success_rate"),
    *("success_ci_low", "success_ci_high", "mean_reward", "ttfc_p50", "ttfc_p95", "mean_steps"),
]


@pytest.fixture
def warehouse(monkeypatch):
    """A fresh emulator, and the production settings pointed at it: `NEWSBENCH_BQ_PROJECT`,
    no key (`NEWSBENCH_GCP_CREDENTIALS` empty: the client's default credentials, here anonymous)
    and `BIGQUERY_EMULATOR_HOST`, which google-cloud-bigquery reads. Yields a client and the
    statements every client sent."""
    with bigquery_emulator() as url:
        monkeypatch.setenv("BIGQUERY_EMULATOR_HOST", url)
        monkeypatch.setenv("NEWSBENCH_BQ_PROJECT", PROJECT)
        monkeypatch.setenv("NEWSBENCH_GCP_CREDENTIALS", "")
        monkeypatch.setattr(
            google.auth, "default", lambda *a, **k: (AnonymousCredentials(), PROJECT)
        )
        sent: list[str] = []
        send = bigquery.Client.query

        def recording_query(self, query, *args, **kwargs):  # named as the client names it
            sent.append(query)
            return send(self, query, *args, **kwargs)

        monkeypatch.setattr(bigquery.Client, "query", recording_query)
        yield SimpleNamespace(client=bigquery.Client(project=PROJECT), sent=sent)


def _rows(client, sql: str, **params) -> pd.DataFrame:
    types = {str: "STRING", int: "INT64", datetime: "TIMESTAMP"}
    config = bigquery.QueryJobConfig(
        query_parameters=[
            bigquery.ScalarQueryParameter(k, types[type(v)], v) for k, v in params.items()
        ]
    )
    return client.query(sql, job_config=config).to_dataframe()


def _analyst(client, name: str, **params) -> pd.DataFrame:
    """`sql/<name>.sql` run with BigQuery query parameters, less its full-line comments:
    bqemulator binds an `@name` wherever the text has one, comments included (BigQuery ignores
    comments), and the queries' header comments name their parameters."""
    lines = analyst_sql.load(name).splitlines()
    return _rows(client, "\n".join(x for x in lines if not x.lstrip().startswith("--")), **params)


def _counts(client) -> dict[tuple[str, str], int]:
    """Rows per table and site."""
    out = {}
    for table in SITE_TABLES:
        sql = f"SELECT site, COUNT(*) AS n FROM {DATASET}.{table} GROUP BY site"
        out.update({(table, r.site): r.n for r in _rows(client, sql).itertuples()})
    return out


def _partition_rows(result) -> dict[str, int]:
    """Rows each asset of a run said it wrote (the IO manager's partition row count)."""
    return {
        event.asset_key.path[-1]: event.materialization.metadata[
            "dagster/partition_row_count"
        ].value
        for event in result.get_asset_materialization_events()
    }


def _same(got, want) -> bool:
    if want is None or pd.isna(want):
        return got is None or pd.isna(got)
    return math.isclose(float(got), float(want), rel_tol=0, abs_tol=1e-9)


def test_the_site_day_and_kpi_jobs_write_bigquery_and_the_analyst_sql_reads_it(
    warehouse, newsroom, tmp_path
):
    client, sent = warehouse.client, warehouse.sent
    # The production resources, with the newsroom on: production polls the real sites, which
    # this machine cannot reach.
    resources = {
        **definitions.RESOURCES["production"](),
        "newsroom": NewsroomResource(port=newsroom.port, seed=newsroom.newsroom.seed),
        "artifacts": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
        "tasks": TaskSetResource(intents=list(LEAD_AND_METADATA)),
    }
    assert isinstance(resources["io_manager"], BigQueryWarehouse)
    defs = definitions.build_definitions(resources)
    site_day, kpi_job = defs.resolve_job_def("site_day_job"), defs.resolve_job_def("kpi_job")
    # The newsroom stopped at one instant: a story published between two runs of a partition
    # would add a feed item.
    with frozen_now(newsroom):
        day = newsroom.clock().date().isoformat()
        with instance_for_test() as instance:

            def run(site: str):
                key = MultiPartitionKey({"site": site, "day": day})
                result = site_day.execute_in_process(partition_key=key, instance=instance)
                assert result.success, site
                return result

            written = {site: _partition_rows(run(site)) for site in ("harbor", "lac")}
            before = _counts(client)
            # Every row an asset wrote is there: none lost on the way (a CSV load that read
            # the first row as a header lost one per partition), none added.
            for site, of_site in written.items():
                for table in SITE_TABLES:
                    assert before.get((table, site), 0) == of_site[table], (table, site)
            assert written["harbor"]["news_tasks"] >= 2 and written["harbor"]["run_scores"] >= 2
            # Again: the partition's rows are replaced, the other site's untouched.
            assert _partition_rows(run("harbor")) == written["harbor"]
            assert _counts(client) == before
            assert kpi_job.execute_in_process(partition_key=day, instance=instance).success

    for table, key in KEYS.items():
        sql = f"SELECT COUNT(*) AS n, COUNT(DISTINCT {key}) AS d FROM {DATASET}.{table}"
        n, distinct = _rows(client, sql).iloc[0]
        assert n == distinct == written["harbor"][table] + written["lac"][table], table

    # Each table was created by the production DDL (day-partitioned, clustered), which the
    # emulator accepted, with the declared column types.
    for table in (*SITE_TABLES, "kpi_daily"):
        ddl = analyst_sql.bigquery_ddl(table, DATASET, PROJECT)
        assert ddl in sent, table
        stored = client.get_table(f"{PROJECT}.{DATASET}.{table}").schema
        types = [(f.name, LEGACY.get(f.field_type, f.field_type)) for f in stored]
        declared = analyst_sql.bigquery_columns(table)
        assert types == [(c, EMULATOR_REPORTS.get(t, t)) for c, t in declared], table
    assert analyst_sql.bigquery_ddl("run_scores", DATASET, PROJECT).endswith(
        "PARTITION BY DATE(day)\nCLUSTER BY site, agent_version"
    )
    # The IO manager replaces a partition by deleting its site and day first.
    assert any(
        q.startswith(f"DELETE FROM `{PROJECT}.{DATASET}.run_scores`")
        and "site in ('harbor')" in q
        and f"day >= '{day} 00:00:00'" in q
        for q in sent
    )
    # JSON values arrive whole (quotes and all, through CSV): the task's own id reads out.
    ids = _rows(
        client,
        f"SELECT COUNTIF(JSON_VALUE(task, '$.id') = task_id) AS ok, COUNT(*) AS n "
        f"FROM {DATASET}.news_tasks",
    ).iloc[0]
    assert ids["ok"] == ids["n"] > 0

    # The analysts' KPI view returns the numbers the kpi_daily asset wrote.
    view = _analyst(client, "kpi_daily_view")
    kpis = normalize_loaded(
        "kpi_daily",
        _rows(client, f"SELECT * FROM {DATASET}.kpi_daily WHERE slice_kind = 'all'"),
    )
    view = normalize_loaded("kpi_daily", view).sort_values(KPI_KEY).reset_index(drop=True)
    kpis = kpis.sort_values(KPI_KEY).reset_index(drop=True)
    assert set(view["site"]) == {"harbor", "lac", "*"}
    assert view[KPI_KEY].astype(str).values.tolist() == kpis[KPI_KEY].astype(str).values.tolist()
    for col in KPI_CORE:
        for got, want in zip(view[col], kpis[col], strict=True):
            assert _same(got, want), (col, got, want)
    star = view[view["site"] == "*"].iloc[0]
    assert star["n_runs"] == written["harbor"]["run_scores"] + written["lac"]["run_scores"]

    # The drift report, its @since a TIMESTAMP parameter bound by BigQuery.
    since = datetime.fromisoformat(day).replace(tzinfo=UTC)
    report = _analyst(client, "drift_report", since=since).set_index("site")
    drift = _rows(client, f"SELECT * FROM {DATASET}.site_drift").set_index("site")
    assert sorted(report.index) == ["harbor", "lac"]
    for site in report.index:
        assert (report.loc[site, "checks"], report.loc[site, "days_checked"]) == (1, 1)
        assert report.loc[site, "drifted_now"] == drift.loc[site, "drifted"]
        assert _same(report.loc[site, "max_abs_feed_z"], abs(drift.loc[site, "feed_z"]))
    assert _analyst(client, "drift_report", since=since.replace(year=2099)).empty


def _candidate(version, site, task, role, success, *, counted=True, excluded=False, n=0):
    return {
        "candidate_version": version,
        "role": role,
        "attempt": 0 if counted else 1,
        "counted": counted,
        "run_id": f"{version}-{site}-{task}-{role}-{n}",
        "task_id": f"{site}-t{task}",
        "site": site,
        "day": "2026-11-20",
        "agent_version": version if role == "candidate" else "v1",
        "success": success,
        "excluded": excluded,
        "trial": n,
    }


CANDIDATE_ROWS = [
    # harbor: four tasks, the candidate worse on three of them.
    *(_candidate("v2", "harbor", t, "candidate", t == 2) for t in range(4)),
    *(_candidate("v2", "harbor", t, "baseline", True) for t in range(4)),
    # rhein: three tasks, the candidate better on one.
    *(_candidate("v2", "rhein", t, "candidate", True) for t in range(3)),
    *(_candidate("v2", "rhein", t, "baseline", t != 1) for t in range(3)),
    # lac: the baseline only.
    *(_candidate("v2", "lac", t, "baseline", t == 0) for t in range(2)),
    # Ignored: an attempt a rerun replaced, an excluded run; another candidate's runs.
    _candidate("v2", "rhein", 1, "baseline", True, counted=False, n=9),
    _candidate("v2", "harbor", 0, "baseline", False, excluded=True, n=9),
    *(_candidate("v3", "harbor", t, "candidate", False) for t in range(2)),
]

# Worked by hand from the rows above, at @min_tasks = 3.
EXPECTED_GATE = {
    "harbor": (4, 4, 0.25, 1.0, -0.75, -0.75, 4, "regressed"),
    "rhein": (3, 3, 1.0, 2 / 3, 1 / 3, 1 / 3, 3, "ok"),
    "lac": (0, 2, None, 0.5, None, None, 0, "insufficient_evidence"),
    "*": (7, 9, 4 / 7, 7 / 9, 4 / 7 - 7 / 9, -2 / 7, 7, "regressed"),
}
GATE_COLUMNS = [
    *("n_candidate_runs", "n_baseline_runs", "candidate_success", "baseline_success"),
    *("delta", "paired_delta", "n_paired_tasks", "verdict"),
]


@candidate_asset(name="candidate_scores")
def candidate_scores_stand_in(context) -> pd.DataFrame:
    """Stands in for the candidate job (a release evaluation): its rows for the version."""
    mine = [r for r in CANDIDATE_ROWS if r["candidate_version"] == context.partition_key]
    return tables.frame("candidate_scores", mine)


def test_candidate_partitions_are_replaced_and_the_release_gate_sql_reads_them(warehouse):
    client, sent = warehouse.client, warehouse.sent
    io_manager = definitions.RESOURCES["production"]()["io_manager"]
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("agent_version", ["v2", "v3"])

        def write(version: str) -> None:
            result = materialize(
                [candidate_scores_stand_in],
                partition_key=version,
                resources={"io_manager": io_manager},
                instance=instance,
            )
            assert result.success, version

        for version in ("v2", "v3", "v2"):
            write(version)
    ddl = analyst_sql.bigquery_ddl("candidate_scores", DATASET, PROJECT)
    assert ddl in sent and ddl.endswith(
        "PARTITION BY DATE(day)\nCLUSTER BY candidate_version, site, agent_version"
    )
    stored = _rows(
        client,
        f"SELECT candidate_version, COUNT(*) AS n, COUNT(DISTINCT run_id) AS d "
        f"FROM {DATASET}.candidate_scores GROUP BY candidate_version ORDER BY 1",
    )
    assert stored.values.tolist() == [["v2", 18, 18], ["v3", 2, 2]]

    gate = _analyst(client, "release_gate", candidate_version="v2", min_tasks=3).set_index("site")
    assert sorted(gate.index) == sorted(EXPECTED_GATE)
    for site, want in EXPECTED_GATE.items():
        got = gate.loc[site, GATE_COLUMNS].tolist()
        assert got[-1] == want[-1], (site, got)
        assert all(_same(g, w) for g, w in zip(got[:-1], want[:-1], strict=True)), (site, got)
    # More tasks required than any site has: no verdict but insufficient evidence.
    strict = _analyst(client, "release_gate", candidate_version="v2", min_tasks=8)
    assert set(strict["verdict"]) == {"insufficient_evidence"}
