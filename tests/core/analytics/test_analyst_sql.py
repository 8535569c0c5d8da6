"""Analyst SQL is written once in BigQuery Standard SQL, parses as BigQuery, and returns the same
numbers as the assets when run for real on DuckDB; production tables are day-partitioned and
clustered.

BigQuery itself is not reachable from here: the production IO manager is exercised against a
recording fake client (`RecordingFakeBigQueryClient`), which shows which statements and load
jobs it would send, not that BigQuery accepts them.
"""

from __future__ import annotations

import math
import random
import re
from contextlib import contextmanager
from datetime import datetime
from types import SimpleNamespace

import duckdb
import pandas as pd
import pytest
import sqlglot
from dagster import EnvVar, instance_for_test, materialize
from dagster_gcp.bigquery.io_manager import BigQueryClient
from sqlglot import exp

from newsbench_dagster.core.analytics import analyst_sql, tables
from newsbench_dagster.core.analytics.analyst_sql import (
    AnalystSQLError,
    bigquery_ddl,
    parse_bigquery,
    run_on_duckdb,
    run_view,
    to_duckdb,
)
from newsbench_dagster.core.analytics.kpis import rollup
from newsbench_dagster.core.release.sequential import MARGIN, task_differences
from newsbench_dagster.definitions import ASSETS, RESOURCES_LOCAL
from newsbench_dagster.resources.bigquery import (
    BigQueryWarehouse,
    DeclaredSchemaBigQueryTypeHandler,
    load_job_config,
    normalize_loaded,
)
from newsbench_dagster.resources.warehouse import DATASET, duckdb_warehouse

# The screen reads a site as regressed where the sequential gate turns from pass to block.
SCREEN = MARGIN / 2

DAYS = ["2026-11-20", "2026-11-21"]
SITES = ["harbor", "rhein"]  # real site keys: the IO manager reads every site of the day
VERSIONS = ["v1", "v2"]
CORE = [
    "n_runs",
    "n_scored",
    "n_env_failures",
    "successes",
    "success_rate",
    "success_ci_low",
    "success_ci_high",
    "mean_reward",
    "ttfc_p50",
    "ttfc_p95",
    "mean_steps",
]
KEY = ["day", "site", "agent_version"]
# What an analyst passes with `bq query --parameter=...`, per parameter the queries use.
EXAMPLE_PARAMS = {"candidate_version": "v2", "min_tasks": 3, "since": datetime(2026, 11, 1)}


# --- every file parses as BigQuery


def test_the_analyst_queries_are_there():
    assert {"kpi_daily_view", "release_gate"} <= set(analyst_sql.names())
    assert (analyst_sql.SQL_DIR / "README.md").is_file()


@pytest.mark.parametrize("name", analyst_sql.names())
def test_every_sql_file_parses_as_bigquery_and_transpiles_to_duckdb(name):
    text = analyst_sql.load(name)
    statements = sqlglot.parse(text, read="bigquery", error_level=sqlglot.ErrorLevel.RAISE)
    assert len([s for s in statements if s is not None]) == 1
    tree = parse_bigquery(text, name)
    assert isinstance(tree, exp.Query)
    # Only the dataset's tables, by their declared names.
    for table in tree.find_all(exp.Table):
        if table.db:
            assert table.db == DATASET and table.name in tables.TABLES
    # Bound and transpiled, it runs on DuckDB against the declared (here empty) tables.
    params = {p: EXAMPLE_PARAMS[p] for p in analyst_sql.parameters(tree)}
    duck = to_duckdb(text, params, name)
    assert not list(sqlglot.parse_one(duck, read="duckdb").find_all(exp.Parameter))
    with duckdb.connect() as con:
        con.execute(f"CREATE SCHEMA {DATASET}")
        for table in tables.TABLES:
            con.execute(tables.ddl(table, DATASET))
        assert con.execute(duck).fetchall() == []


def test_broken_sql_is_rejected_with_its_name_and_line():
    with pytest.raises(AnalystSQLError, match=r"sql/broken\.sql:2:\d+"):
        parse_bigquery("SELECT site,\nFROM (\n", "sql/broken.sql")
    with pytest.raises(AnalystSQLError, match="broken.sql: expected one statement, found 2"):
        parse_bigquery("SELECT 1; SELECT 2", "broken.sql")
    with pytest.raises(AnalystSQLError, match="not an analyst query name"):
        analyst_sql.load("../pyproject")
    with pytest.raises(AnalystSQLError, match="no analyst query 'nope'"):
        analyst_sql.load("nope")


def test_query_parameters_are_bound_as_literals_never_as_text():
    sql = (
        "SELECT site FROM newsbench.candidate_scores WHERE candidate_version = @v AND attempt < @k"
    )
    hostile = "v2' OR TRUE --"
    out = to_duckdb(sql, {"v": hostile, "k": 2.5})
    assert "'v2'' OR TRUE --'" in out and "CAST(2.5 AS DOUBLE)" in out
    with duckdb.connect() as con:  # the hostile value is one string literal, matching nothing
        con.execute("CREATE SCHEMA newsbench")
        con.execute(tables.ddl("candidate_scores", "newsbench"))
        con.execute(
            "INSERT INTO newsbench.candidate_scores (site, candidate_version) VALUES"
            " ('harbor', 'v2')"
        )
        assert con.execute(to_duckdb(sql, {"v": hostile, "k": 1})).fetchall() == []
        assert con.execute(
            to_duckdb(sql.replace(" AND attempt < @k", ""), {"v": "v2"})
        ).fetchall() == [("harbor",)]
    with pytest.raises(AnalystSQLError, match="missing query parameter.*@k"):
        to_duckdb(sql, {"v": "v2"})
    with pytest.raises(AnalystSQLError, match="@k: list is not a supported type"):
        to_duckdb(sql, {"v": "v2", "k": [1]})
    with pytest.raises(AnalystSQLError, match="@k: not a finite number"):
        to_duckdb(sql, {"v": "v2", "k": float("nan")})


# --- the KPI view returns the assets' numbers


def _score_rows(seed: int = 11) -> list[dict]:
    """Two days x 2 sites x 2 versions of runs: excluded (environment failures and ambiguous
    tasks), varied TTFC with gaps, and groups at 0/n, n/n and nothing scored."""
    rng = random.Random(seed)
    rows: list[dict] = []
    for day in DAYS:
        for site in SITES:
            for version in VERSIONS:
                for i in range(rng.randint(9, 17)):
                    excluded = rng.random() < 0.2
                    success = (not excluded) and rng.random() < 0.6
                    rows.append(
                        {
                            "run_id": f"{day}-{site}-{version}-{i}",
                            "task_id": f"{site}-t{i % 6}",
                            "site": site,
                            "day": f"{day}T00:00:00Z",
                            "intent": rng.choice(["headline", "byline"]),
                            "agent_name": "ref",
                            "agent_version": version,
                            "trial": i % 2,
                            "reward": round(rng.random(), 6) if not excluded else None,
                            "success": success,
                            "excluded": excluded,
                            "exclusion_reason": "site down" if excluded else None,
                            "failure_class": (
                                rng.choice(["ambiguous", "navigation_timeout", None])
                                if excluded
                                else (None if success else "content_mismatch")
                            ),
                            "ttfc_seconds": (
                                None if rng.random() < 0.25 else round(rng.uniform(0.5, 40), 3)
                            ),
                            "steps": rng.randint(1, 30),
                            "tokens": rng.randint(100, 5000),
                            "safety_incidents": 0,
                            "claim_mismatch": False,
                        }
                    )
    day = f"{DAYS[0]}T00:00:00Z"
    # Edge groups on the first day: a version that never succeeds, one that always does, and
    # one whose runs were all excluded (nothing scored: every rate and bound is NULL).
    for version, success, excluded, failure in [
        ("v0-never", False, False, "content_mismatch"),
        ("v0-always", True, False, None),
        ("v0-unscored", False, True, "ambiguous"),
    ]:
        for i in range(4):
            rows.append(
                {
                    "run_id": f"{version}-{i}",
                    "task_id": f"harbor-t{i}",
                    "site": "harbor",
                    "day": day,
                    "intent": "headline",
                    "agent_name": "ref",
                    "agent_version": version,
                    "reward": 0.25 * i,
                    "success": success,
                    "excluded": excluded,
                    "failure_class": failure,
                    "ttfc_seconds": 1.5 * (i + 1),
                    "steps": i + 2,
                    "tokens": 10,
                    "safety_incidents": 0,
                    "claim_mismatch": False,
                }
            )
    return rows


def _task_rows() -> list[dict]:
    return [
        {"task_id": f"{site}-t{i}", "site": site, "day": f"{day}T00:00:00Z", "intent": "headline"}
        for day in DAYS
        for site in SITES
        for i in range(6)
    ]


def _resources(io_manager) -> dict:
    """The project's resources with the warehouse under test; only `io_manager` is set up, as
    `kpi_daily` is the one asset materialized (its upstreams are read from the warehouse)."""
    return {**RESOURCES_LOCAL, "io_manager": io_manager}


def _write(db, table: str, df: pd.DataFrame) -> None:
    with duckdb.connect(str(db)) as con:
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {DATASET}")
        con.execute(tables.ddl(table, DATASET))
        con.register("frame_in", df)
        con.execute(f"INSERT INTO {DATASET}.{table} BY NAME SELECT * FROM frame_in")


def _expected_from_rollup(scores: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for day in DAYS:
        of_day = scores[scores["day"] == pd.Timestamp(day)]
        for r in rollup(of_day, {}):
            if r["slice_kind"] == "all":
                rows.append({"day": pd.Timestamp(day), **r})
    return pd.DataFrame(rows)


def _assert_same(view: pd.DataFrame, expected: pd.DataFrame) -> None:
    view = view.sort_values(KEY).reset_index(drop=True)
    expected = expected.sort_values(KEY).reset_index(drop=True)
    assert len(view) == len(expected)
    assert view[KEY].astype(str).values.tolist() == expected[KEY].astype(str).values.tolist()
    assert (view["slice_kind"] == "all").all() and (view["slice_value"] == "*").all()
    for col in CORE:
        for got, want, key in zip(view[col], expected[col], view[KEY].values, strict=True):
            if want is None or pd.isna(want):
                assert got is None or pd.isna(got), (col, key, got)
            else:
                assert math.isclose(float(got), float(want), rel_tol=0, abs_tol=1e-9), (
                    col,
                    key,
                    got,
                    want,
                )


def test_kpi_view_on_duckdb_matches_the_rollup(tmp_path):
    db = tmp_path / "wh.duckdb"
    scores = tables.frame("run_scores", _score_rows())
    _write(db, "run_scores", scores)
    view = run_view(db, "kpi_daily_view")
    expected = _expected_from_rollup(scores)
    _assert_same(view, expected)
    # The data covers what it claims to: both sites, both days, the '*' rows, exclusions of
    # both kinds, the exact 0/n and n/n bounds and a group with nothing scored.
    assert set(view["site"]) == {*SITES, "*"} and view["day"].nunique() == 2
    assert (view["n_env_failures"] < view["n_runs"] - view["n_scored"]).any()
    by_version = view[view["site"] == "harbor"].set_index("agent_version")
    assert by_version.loc["v0-never", "success_ci_low"] == 0.0
    assert by_version.loc["v0-always", "success_ci_high"] == 1.0
    assert pd.isna(by_version.loc["v0-unscored", "success_rate"])
    assert by_version.loc["v0-unscored", "n_env_failures"] == 0  # ambiguous: nobody's failure


@pytest.mark.heavy(12)  # about 12 s on two busy cores
def test_kpi_view_matches_the_materialized_kpi_daily_asset(tmp_path):
    """The acceptance test: the analyst SQL parses as BigQuery and returns the same numbers as
    the assets on DuckDB (the real `kpi_daily` asset, materialized by Dagster from the file)."""
    db = tmp_path / "wh.duckdb"
    _write(db, "run_scores", tables.frame("run_scores", _score_rows()))
    _write(db, "news_tasks", tables.frame("news_tasks", _task_rows()))
    with instance_for_test() as instance:
        for day in DAYS:
            result = materialize(
                ASSETS,
                selection=["kpi_daily"],
                partition_key=day,
                resources=_resources(duckdb_warehouse(str(db))),
                instance=instance,
            )
            assert result.success
    with duckdb.connect(str(db), read_only=True) as con:
        written = con.execute(
            f"SELECT * FROM {DATASET}.kpi_daily WHERE slice_kind = 'all'"
        ).fetchdf()
        view = run_on_duckdb(con, "kpi_daily_view")
    assert len(written) > 0 and set(written["day"].dt.strftime("%Y-%m-%d")) == set(DAYS)
    _assert_same(view, written)


# --- the release gate screen


def _candidate_rows() -> list[dict]:
    rng = random.Random(5)
    rows: list[dict] = []
    # harbor: 5 tasks, candidate clearly worse; rhein: 3 tasks, about even; lac: baseline only.
    plan = {"harbor": (5, 0.3, 0.8), "rhein": (3, 0.7, 0.6), "lac": (2, None, 0.5)}
    for site, (n_tasks, p_cand, p_base) in plan.items():
        for t in range(n_tasks):
            for role, p in (("candidate", p_cand), ("baseline", p_base)):
                if p is None:
                    continue
                for trial in range(3):
                    rows.append(
                        {
                            "candidate_version": "v2",
                            "role": role,
                            "attempt": 0,
                            "counted": True,
                            "run_id": f"{site}-{t}-{role}-{trial}",
                            "task_id": f"{site}-t{t}",
                            "site": site,
                            "day": "2026-11-20",
                            "agent_version": "v2" if role == "candidate" else "v1",
                            "success": rng.random() < p,
                            "excluded": False,
                            "trial": trial,
                        }
                    )
    base = {"candidate_version": "v2", "day": "2026-11-20", "trial": 9}
    rows += [
        # An attempt a rerun replaced (counted = FALSE), and an excluded run: both ignored.
        {
            **base,
            "role": "candidate",
            "attempt": 0,
            "counted": False,
            "task_id": "rhein-t0",
            "site": "rhein",
            "success": True,
            "excluded": False,
            "run_id": "superseded",
        },
        {
            **base,
            "role": "baseline",
            "attempt": 1,
            "counted": True,
            "task_id": "rhein-t1",
            "site": "rhein",
            "success": False,
            "excluded": True,
            "run_id": "env-failure",
        },
        # Another candidate's rows: not this query's.
        {
            **base,
            "candidate_version": "v3",
            "role": "candidate",
            "attempt": 0,
            "counted": True,
            "task_id": "harbor-t0",
            "site": "harbor",
            "success": True,
            "excluded": False,
            "run_id": "other-candidate",
        },
    ]
    return rows


def _expected_gate(rows: list[dict], min_tasks: int) -> dict[str, dict]:
    kept = [
        r
        for r in rows
        if r["candidate_version"] == "v2" and r["counted"] and not r.get("excluded", False)
    ]
    out = {}
    for site in sorted({r["site"] for r in kept}) + ["*"]:
        mine = [r for r in kept if site in ("*", r["site"])]
        rates: dict[str, dict[str, float]] = {}
        for role in ("candidate", "baseline"):
            of_role = [r for r in mine if r["role"] == role]
            by_task: dict[str, list[bool]] = {}
            for r in of_role:
                by_task.setdefault(r["task_id"], []).append(bool(r["success"]))
            rates[role] = {t: sum(v) / len(v) for t, v in by_task.items()}
            out.setdefault(site, {})[f"n_{role}_runs"] = len(of_role)
            out[site][f"{role}_success"] = (
                sum(bool(r["success"]) for r in of_role) / len(of_role) if of_role else None
            )
        both = sorted(set(rates["candidate"]) & set(rates["baseline"]))
        paired = (
            sum(rates["candidate"][t] - rates["baseline"][t] for t in both) / len(both)
            if both
            else None
        )
        c, b = out[site]["candidate_success"], out[site]["baseline_success"]
        out[site].update(
            delta=None if c is None or b is None else c - b,
            paired_delta=paired,
            n_paired_tasks=len(both),
            verdict=(
                "insufficient_evidence"
                if len(both) < min_tasks
                else "regressed"
                if paired < SCREEN
                else "ok"
            ),
        )
    return out


@pytest.mark.parametrize("min_tasks", [3, 6])
def test_release_gate_matches_python_per_site(tmp_path, min_tasks):
    rows = _candidate_rows()
    db = tmp_path / "wh.duckdb"
    _write(db, "candidate_scores", tables.frame("candidate_scores", rows))
    got = run_view(db, "release_gate", {"candidate_version": "v2", "min_tasks": min_tasks})
    expected = _expected_gate(rows, min_tasks)
    assert sorted(got["site"]) == sorted(expected)  # v3's row and no phantom sites
    for r in got.to_dict("records"):
        want = expected[r["site"]]
        for col, value in want.items():
            if value is None:
                assert r[col] is None or pd.isna(r[col]), (r["site"], col)
            elif isinstance(value, float):
                assert math.isclose(r[col], value, abs_tol=1e-12), (r["site"], col, r[col])
            else:
                assert r[col] == value, (r["site"], col, r[col], value)
    verdicts = dict(zip(got["site"], got["verdict"], strict=True))
    assert verdicts["lac"] == "insufficient_evidence"  # no candidate runs there
    if min_tasks == 3:
        assert verdicts["harbor"] == "regressed"
    # The all-sites point estimate is the gate's (core/release/sequential.py).
    kept = [
        r for r in rows if r["candidate_version"] == "v2" and r["counted"] and not r["excluded"]
    ]
    trials: dict[str, dict[str, list[bool]]] = {"candidate": {}, "baseline": {}}
    for r in kept:
        trials[r["role"]].setdefault(r["task_id"], []).append(r["success"])
    gate = task_differences(trials["candidate"], trials["baseline"])
    star = got[got["site"] == "*"].iloc[0]
    assert math.isclose(star["paired_delta"], sum(gate.values()) / len(gate), abs_tol=1e-12)
    assert star["n_paired_tasks"] == len(gate)


def test_release_gate_states_the_gates_margin_and_that_it_is_a_screen():
    text = analyst_sql.load("release_gate")
    assert f"paired_delta < {SCREEN}" in text
    assert "sequential" in text and f"above {MARGIN}" in text
    with pytest.raises(AnalystSQLError, match="missing query parameter.*@candidate_version"):
        to_duckdb(text, {"min_tasks": 3})


# --- the drift report


def test_drift_report_matches_python(tmp_path):
    def check(site, day, hour, *, changed=False, anomaly=False, drifted=False, delta=None, z=0.0):
        return {
            "site": site,
            "day": f"2026-11-{day:02d}",
            "checked_at": f"2026-11-{day:02d}T{hour:02d}:00:00Z",
            "template_changed": changed,
            "volume_anomaly": anomaly,
            "drifted": drifted,
            "baseline_delta": delta,
            "feed_z": z,
        }

    rows = [
        check("harbor", 1, 6, changed=True, drifted=True, delta=-0.2, z=-3.5),  # before @since
        check("harbor", 10, 6, changed=True, drifted=True, delta=-0.1, z=1.0),
        check("harbor", 10, 18, changed=True, delta=-0.3, z=-2.5),
        check("harbor", 11, 6, anomaly=True, z=4.0),
        check("rhein", 10, 6, z=0.5),
        check("rhein", 12, 6, drifted=True, anomaly=True, z=-1.5),
    ]
    db = tmp_path / "wh.duckdb"
    _write(db, "site_drift", tables.frame("site_drift", rows))
    got = run_view(db, "drift_report", {"since": datetime(2026, 11, 5)}).set_index("site")
    assert list(got.index) == ["harbor", "rhein"]
    harbor, rhein = got.loc["harbor"], got.loc["rhein"]
    assert (harbor["checks"], harbor["days_checked"], harbor["template_changes"]) == (3, 2, 2)
    assert (harbor["volume_anomalies"], harbor["drifted_checks"]) == (1, 1)
    assert harbor["last_drift_day"] == pd.Timestamp("2026-11-10") and not harbor["drifted_now"]
    assert math.isclose(harbor["drift_sensitivity"], (-0.1 - 0.3) / 2)
    assert harbor["max_abs_feed_z"] == 4.0
    assert rhein["drifted_now"] and rhein["last_drift_day"] == pd.Timestamp("2026-11-12")
    assert pd.isna(rhein["drift_sensitivity"]) and rhein["max_abs_feed_z"] == 1.5


# --- BigQuery DDL


@pytest.mark.parametrize("table", sorted(tables.TABLES))
def test_bigquery_ddl_parses_and_is_partitioned_and_clustered(table):
    ddl = bigquery_ddl(table, DATASET, project="my-project")
    tree = parse_bigquery(ddl, f"ddl:{table}")
    assert isinstance(tree, exp.Create) and tree.args.get("exists")
    schema = tree.this
    columns = {c.name: c.args["kind"].sql("bigquery") for c in schema.expressions}
    assert list(columns) == list(tables.TABLES[table])
    assert set(columns.values()) <= {"STRING", "INT64", "FLOAT64", "BOOL", "TIMESTAMP", "JSON"}
    assert all(columns[c] == analyst_sql.BIGQUERY_TYPES[k] for c, k in tables.TABLES[table].items())
    partitioned = tree.find(exp.PartitionedByProperty)
    cluster = tree.find(exp.ClusterProperty)
    if "day" in tables.TABLES[table]:
        assert partitioned is not None and "PARTITION BY DATE(day)" in ddl
    if {"site", "agent_version", "candidate_version"} & set(tables.TABLES[table]):
        assert cluster is not None and 1 <= len(cluster.expressions) <= 4
    assert ddl.startswith(f"CREATE TABLE IF NOT EXISTS `my-project.{DATASET}.{table}` (")


def test_run_scores_ddl_and_the_rules_for_other_tables(monkeypatch):
    ddl = bigquery_ddl("run_scores", DATASET)
    assert ddl.startswith("CREATE TABLE IF NOT EXISTS newsbench.run_scores (")
    assert ddl.endswith("PARTITION BY DATE(day)\nCLUSTER BY site, agent_version")
    assert "  verdicts JSON,\n" in ddl and "  day TIMESTAMP,\n" in ddl
    assert bigquery_ddl("candidate_scores", DATASET).endswith(
        "CLUSTER BY candidate_version, site, agent_version"
    )
    assert bigquery_ddl("site_drift", DATASET).endswith("PARTITION BY DATE(day)\nCLUSTER BY site")
    monkeypatch.setitem(tables.TABLES, "no_day", {"name": "string", "n": "int"})
    assert bigquery_ddl("no_day", DATASET) == (
        "CREATE TABLE IF NOT EXISTS newsbench.no_day (\n  name STRING,\n  n INT64\n)"
    )
    evolve = analyst_sql.bigquery_evolve("run_scores", DATASET, "p", columns=["pii_flags"])
    assert (
        evolve == "ALTER TABLE `p.newsbench.run_scores`\n  ADD COLUMN IF NOT EXISTS pii_flags INT64"
    )
    parse_bigquery(analyst_sql.bigquery_evolve("run_scores", DATASET), "evolve")


# --- the production IO manager


def test_production_uses_the_bigquery_warehouse_with_env_vars_read_at_run_time(monkeypatch):
    from newsbench_dagster.definitions import production

    monkeypatch.delenv("NEWSBENCH_BQ_PROJECT", raising=False)
    monkeypatch.delenv("NEWSBENCH_GCP_CREDENTIALS", raising=False)
    defs = production()  # nothing read yet: no error without the variables
    io = defs.resources["io_manager"]
    assert isinstance(io, BigQueryWarehouse)
    assert isinstance(io.project, EnvVar) and io.project == "NEWSBENCH_BQ_PROJECT"
    assert isinstance(io.gcp_credentials, EnvVar)
    assert io.gcp_credentials == "NEWSBENCH_GCP_CREDENTIALS"
    assert io.dataset == DATASET
    assert [type(h) for h in io.type_handlers()] == [DeclaredSchemaBigQueryTypeHandler]


def test_load_job_config_keeps_json_and_timestamp_types(tmp_path):
    from google.cloud import bigquery
    from google.cloud.bigquery import _pandas_helpers

    df = tables.frame(
        "kpi_daily",
        [
            {"day": "2026-11-20", "site": "a,b", "failure_taxonomy": {'say "x"': 1}, "n_runs": 3},
            {"site": "two\nlines", "success_rate": 0.1},
        ],
    )
    config = load_job_config("kpi_daily", list(df.columns))
    types = {f.name: f.field_type for f in config.schema}
    assert [f.name for f in config.schema] == list(df.columns)  # CSV maps by position
    assert types["day"] == "TIMESTAMP" and types["failure_taxonomy"] == "JSON"
    assert types["n_runs"] == "INT64" and types["success_rate"] == "FLOAT64"
    assert config.source_format == bigquery.SourceFormat.CSV  # JSON loads from CSV, not Parquet
    assert config.allow_quoted_newlines and config.write_disposition == "WRITE_APPEND"
    with pytest.raises(ValueError, match="not declared"):
        load_job_config("kpi_daily", ["day", "surprise"])
    # What the client would upload: UTC wall-clock timestamps, JSON text, NULL as empty.
    path = tmp_path / "upload.csv"
    _pandas_helpers.dataframe_to_csv(df, config.schema, str(path))
    text = path.read_text(encoding="utf-8")
    assert text.startswith('2026-11-20 00:00:00.000000,"a,b",')
    assert '"{""say \\""x\\"""": 1}"' in text and '"two\nlines"' in text


def test_frames_read_from_bigquery_take_the_duckdb_shape():
    raw = pd.DataFrame(
        {
            "DAY": pd.to_datetime(["2026-11-20T00:00:00Z", None], utc=True),
            "SITE": ["harbor", "rhein"],
            "FAILURE_TAXONOMY": [{"a": 1}, None],
            "N_RUNS": [3, None],
            "SUCCESS_RATE": [0.5, None],
        }
    )
    df = normalize_loaded("kpi_daily", raw)
    assert str(df["day"].dtype) == "datetime64[us]" and df["day"][0] == pd.Timestamp("2026-11-20")
    assert df["failure_taxonomy"].tolist() == ['{"a": 1}', None]
    assert str(df["n_runs"].dtype) == "Int64" and df["n_runs"].isna().tolist() == [False, True]


class RecordingFakeBigQueryClient:
    """A FAKE `google.cloud.bigquery.Client` (BigQuery cannot run here): it records every
    statement and load job, answers SELECTs from in-memory frames and `get_table` from the
    tables it was asked to create."""

    def __init__(self, frames: dict[str, pd.DataFrame]):
        self.frames = frames
        self.calls: list[tuple[str, object]] = []
        self.created: dict[str, str] = {}

    def query(self, query, **kwargs):
        self.calls.append(("query", query))
        match = re.match(r"CREATE TABLE IF NOT EXISTS `([^`]+)`", query)
        if match:
            self.created[match.group(1)] = query
        table = re.search(r"FROM\s+`[^`]*\.(\w+)`", query)
        frame = self.frames.get(table.group(1)) if table and query.startswith("SELECT") else None
        result = (frame if frame is not None else pd.DataFrame()).rename(columns=str.upper)
        return SimpleNamespace(result=lambda: None, to_dataframe=lambda: result.copy())

    def get_table(self, ref):
        self.calls.append(("get_table", ref))
        ddl = self.created[ref]
        partitioned = "PARTITION BY DATE(day)" in ddl
        names = re.findall(r"^  (\w+) ", ddl, flags=re.M)
        return SimpleNamespace(
            schema=[SimpleNamespace(name=n) for n in names],
            time_partitioning=SimpleNamespace(field="day") if partitioned else None,
        )

    def load_table_from_dataframe(self, dataframe, destination, **kwargs):
        self.calls.append(("load", (destination, dataframe.copy(), kwargs)))
        return SimpleNamespace(result=lambda: None)


def test_the_bigquery_io_manager_creates_partitioned_clustered_tables_before_writing(
    monkeypatch,
):
    """`kpi_daily` materialized through the production IO manager, its connection replaced by
    the recording fake: the upstream tables are created and read, then the output table is
    created (PARTITION BY DATE(day), CLUSTER BY site, agent_version) before the load job."""
    scores = tables.frame("run_scores", _score_rows())
    day = DAYS[0]
    of_day = scores[scores["day"] == pd.Timestamp(day)]
    fake = RecordingFakeBigQueryClient(
        {
            "run_scores": of_day.assign(day=of_day["day"].dt.tz_localize("UTC")),
            "news_tasks": tables.frame("news_tasks", _task_rows()),
        }
    )

    @contextmanager
    def connect(context, table_slice):
        yield fake

    monkeypatch.setattr(BigQueryClient, "connect", staticmethod(connect))
    with instance_for_test() as instance:
        result = materialize(
            ASSETS,
            selection=["kpi_daily"],
            partition_key=day,
            resources=_resources(BigQueryWarehouse(project="fake-project", dataset=DATASET)),
            instance=instance,
        )
    assert result.success
    statements = [q for kind, q in fake.calls if kind == "query"]
    for statement in statements:  # everything sent is BigQuery syntax (as far as sqlglot knows)
        parse_bigquery(statement, "sent to the fake")
    create = next(
        i
        for i, (kind, q) in enumerate(fake.calls)
        if kind == "query"
        and q.startswith("CREATE TABLE IF NOT EXISTS `fake-project.newsbench.kpi_daily`")
    )
    load = next(i for i, (kind, _) in enumerate(fake.calls) if kind == "load")
    assert create < load
    ddl = fake.calls[create][1]
    assert ddl.endswith("PARTITION BY DATE(day)\nCLUSTER BY site, agent_version")
    # The partition's rows are deleted first (the IO manager's replace-a-partition), by day.
    delete = next(
        q for q in statements if q.startswith("DELETE FROM `fake-project.newsbench.kpi_daily`")
    )
    assert f"day >= '{day} 00:00:00'" in delete
    assert fake.calls.index(("query", delete)) < load
    # Upstream tables are declared before they are read (the fake answers in upper case, as
    # the stock handler writes; the rows come back in the DuckDB shape, see the numbers below).
    assert "fake-project.newsbench.run_scores" in fake.created
    order = [q.split("(")[0] for q in statements if "newsbench.run_scores" in q]
    assert order[0].startswith("CREATE TABLE IF NOT EXISTS") and order[-1].startswith("SELECT")
    destination, frame, kwargs = fake.calls[load][1]
    assert destination == f"{DATASET}.kpi_daily" and kwargs["project"] == "fake-project"
    assert list(frame.columns) == list(tables.TABLES["kpi_daily"])  # not upper-cased
    schema = {f.name: f.field_type for f in kwargs["job_config"].schema}
    assert schema["day"] == "TIMESTAMP" and schema["failure_taxonomy"] == "JSON"
    # And the frame it would load holds the rollup of the day's scores.
    expected = _expected_from_rollup(of_day)
    _assert_same(
        frame[frame["slice_kind"] == "all"][[*KEY, "slice_kind", "slice_value", *CORE]],
        expected[expected["day"] == pd.Timestamp(day)].assign(slice_kind="all", slice_value="*"),
    )
    # The table is declared once per run, however many partitions it writes.
    assert sum(q.startswith("CREATE TABLE") and "kpi_daily" in q for q in statements) == 1
