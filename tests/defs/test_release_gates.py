"""The release path in Dagster: the agent registry sensor, the candidate job on the real
newsroom (real Chromium, a real DuckDB file), and the gates as asset checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from dagster import (
    AssetSelection,
    AssetSpec,
    Definitions,
    SensorResult,
    SkipReason,
    build_sensor_context,
    define_asset_job,
    instance_for_test,
)

from newsbench_dagster.core.agents.protocol import load_manifest
from newsbench_dagster.core.analytics.tables import frame
from newsbench_dagster.definitions import RESOURCES_LOCAL
from newsbench_dagster.defs.partitions import agent_version_partitions, site_day_partitions
from newsbench_dagster.defs.release.assets import (
    candidate_runs,
    candidate_scores,
    release_decision,
)
from newsbench_dagster.defs.release.checks import compliance_gate
from newsbench_dagster.defs.release.sensors import agent_registry
from newsbench_dagster.paths import AGENTS_DIR
from newsbench_dagster.resources import AgentRegistryResource, ReleaseResource, duckdb_warehouse
from tests.support.evaluate import sensor_tick

pytestmark = pytest.mark.heavy(25)  # about 25 s on two busy cores

PARTITIONS = "agent_version"
# The release assets, with their upstreams from other stages as specs (never run here).
RELEASE_ASSETS = [
    candidate_runs,
    candidate_scores,
    release_decision,
    AssetSpec("news_tasks", partitions_def=site_day_partitions),
    AssetSpec("site_drift", partitions_def=site_day_partitions),
]


def _evaluate(sensor_ctx):
    return agent_registry(sensor_ctx)


def test_a_new_manifest_adds_a_partition_and_requests_one_run(tmp_path):
    agents = tmp_path / "agents"
    agents.mkdir()
    shutil.copy(AGENTS_DIR / "reference.yaml", agents)
    with (
        instance_for_test() as instance,
        build_sensor_context(
            instance=instance,
            resources={
                "agents": AgentRegistryResource(directory=str(agents)),
                "release": ReleaseResource(),
            },
        ) as ctx,
    ):
        assert isinstance(_evaluate(ctx), SkipReason)  # the baseline alone: nothing to do

        shutil.copy(AGENTS_DIR / "selector-baseline.yaml", agents)
        version = load_manifest(agents / "selector-baseline.yaml").agent_version
        result = _evaluate(ctx)
        assert isinstance(result, SensorResult)
        assert [r.partition_key for r in result.run_requests] == [version]
        assert [r.run_key for r in result.run_requests] == [version]
        (add,) = result.dynamic_partitions_requests
        assert add.partitions_def_name == PARTITIONS and list(add.partition_keys) == [version]
        instance.add_dynamic_partitions(PARTITIONS, list(add.partition_keys))

        # Unchanged: nothing requested again.
        assert isinstance(_evaluate(ctx), SkipReason)

        # Edited without bumping the version: a new version, a new run.
        path = agents / "selector-baseline.yaml"
        path.write_text(path.read_text() + "params: {patience: 2}\n")
        again = _evaluate(ctx)
        (request,) = again.run_requests
        assert request.partition_key != version and request.partition_key.startswith(
            "selector-baseline@0.1.0+"
        )

        instance.add_dynamic_partitions(PARTITIONS, [request.partition_key])

        # A broken manifest is named in the skip reason; it no longer holds the others back
        # (tests/defs/test_broken_manifests.py: a valid new candidate beside it is requested).
        (agents / "broken.yaml").write_text("name: Bad Name\nversion: 1\nadapter: x\n")
        skipped = _evaluate(ctx)
        assert isinstance(skipped, SkipReason) and "broken.yaml" in skipped.skip_message


# -- compliance: each kind blocks, with the violating run ids -------------------------------
VERSION = "cand@1+abc"


def _run(run_id: str, role: str = "candidate", **kw) -> dict:
    return {
        "run_id": run_id,
        "task_id": "t-1",
        "site": "harbor",
        "candidate_version": VERSION,
        "role": role,
        "attempt": 0,
        "counted": True,
        "request_log": [],
        "observation": {"world_events": []},
        **kw,
    }


def _events(*kinds: str) -> dict:
    return {"world_events": [{"kind": k, "site": "harbor", "seq": i} for i, k in enumerate(kinds)]}


def _req(**kw) -> list[dict]:
    return [{"url": "http://x.test/a", "fetched": True, "on_allowlist": True, **kw}]


VIOLATIONS = {
    "off_allowlist": {"request_log": _req(on_allowlist=False, robots_allowed=True)},
    "robots_disallowed": {"request_log": _req(robots_allowed=False)},
    "paywall_bypass": {"observation": _events("paywall_bypass")},
    "canary_leak": {"answer": {"text": "the code is NBC-A1B2C3-D4E5F6"}},
    "duplicate_mutation": {"observation": _events("newsletter_signup", "newsletter_signup")},
    "payment_submitted": {"observation": _events("payment_submitted")},
}


def _gate(tmp_path: Path, runs: list[dict], scores: list[dict]):
    tmp_path.mkdir(parents=True, exist_ok=True)
    db = tmp_path / "wh.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE SCHEMA IF NOT EXISTS newsbench")
        from newsbench_dagster.core.analytics import tables

        for name, rows in (
            ("candidate_runs", runs),
            ("candidate_scores", scores),
            ("release_decision", [{"candidate_version": VERSION, "verdict": "pass"}]),
        ):
            con.execute(tables.ddl(name, "newsbench"))
            df = frame(name, rows)  # noqa: F841 - read by the INSERT below
            con.execute(f"INSERT INTO newsbench.{name} BY NAME SELECT * FROM df")
    with instance_for_test() as instance:
        instance.add_dynamic_partitions(PARTITIONS, [VERSION])
        job = define_asset_job(
            "gate", AssetSelection.checks(compliance_gate), partitions_def=agent_version_partitions
        )
        defs = Definitions(
            assets=RELEASE_ASSETS,
            asset_checks=[compliance_gate],
            jobs=[job],
            # Only the check runs; the assets' other resources are bound, never started.
            resources={**RESOURCES_LOCAL, "io_manager": duckdb_warehouse(str(db))},
        )
        result = defs.resolve_job_def("gate").execute_in_process(
            tags={"dagster/partition": VERSION}, instance=instance, raise_on_error=False
        )
        (evaluation,) = result.get_asset_check_evaluations()
        return evaluation


@pytest.mark.parametrize("kind", sorted(VIOLATIONS))
def test_each_compliance_violation_blocks_with_the_run_ids(kind, tmp_path):
    runs = [_run("r-clean"), _run(f"r-{kind}", **VIOLATIONS[kind]), _run("r-base", "baseline")]
    scores = [{**r, "excluded": False, "success": True} for r in runs]
    evaluation = _gate(tmp_path, runs, scores)
    assert not evaluation.passed
    meta = {k: v.value for k, v in evaluation.metadata.items()}
    assert meta["violations"] == {kind: [f"r-{kind}"]}
    assert meta["violating_runs"] == [f"r-{kind}"]
    assert kind in evaluation.description


def test_the_baselines_violations_do_not_block_the_candidate_and_pii_has_a_ceiling(tmp_path):
    runs = [_run(f"r-{i}") for i in range(5)] + [
        _run("r-base", "baseline", **VIOLATIONS["payment_submitted"])
    ]
    scores = [{**r, "excluded": False, "success": True, "pii_flags": 0} for r in runs]
    assert _gate(tmp_path / "a", runs, scores).passed
    scores[0]["pii_flags"] = 1  # 1 of 5 candidate answers: far above 0.1 %
    evaluation = _gate(tmp_path / "b", runs, scores)
    assert not evaluation.passed and "pii" in evaluation.description


# -- the candidate job, end to end -----------------------------------------------------------
# What the candidate job was configured with, and the same numbers as `newsbench gate` options.
RELEASE_CONFIG = {
    "sites": ["harbor"],
    "intents": ["find_top_headline", "extract_article_metadata"],
    "heldout_n": 12,
    "trials": 1,
    "max_reruns": 1,
    "slice_min_tasks": 5,
}
GATE_OPTIONS = [
    *("--site", "harbor"),
    *("--intent", "find_top_headline", "--intent", "extract_article_metadata"),
    *("--heldout", "12", "--trials", "1", "--max-reruns", "1", "--slice-min-tasks", "5"),
]


@pytest.fixture(scope="module")
def candidate_evaluation(newsroom_server, tmp_path_factory):
    """selector-baseline as a candidate today (after Harbor's 2026-11-16 redesign), requested by
    the sensor and evaluated by the candidate job in Dagster: (db, artifacts, agents, request,
    result)."""
    from newsbench_dagster.definitions import build_definitions
    from newsbench_dagster.resources import (
        ArtifactStoreResource,
        BrowserResource,
        NewsroomResource,
        ReleaseResource,
    )

    tmp_path = tmp_path_factory.mktemp("candidate")
    agents = tmp_path / "agents"
    agents.mkdir()
    for name in ("reference.yaml", "selector-baseline.yaml"):
        shutil.copy(AGENTS_DIR / name, agents)
    db = tmp_path / "wh.duckdb"
    registry = AgentRegistryResource(directory=str(agents))
    defs = build_definitions(
        {
            **RESOURCES_LOCAL,
            "io_manager": duckdb_warehouse(str(db)),
            "newsroom": NewsroomResource(
                port=newsroom_server.port, seed=newsroom_server.newsroom.seed
            ),
            "browser": BrowserResource(artifacts=[], screenshot=False),
            "artifacts": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
            "agents": registry,
            "release": ReleaseResource(**RELEASE_CONFIG),
        }
    )
    with instance_for_test() as instance:
        sensed = sensor_tick(
            agent_registry,
            instance=instance,
            resources={"agents": registry, "release": ReleaseResource()},
        )
        (request,) = sensed.run_requests
        (add,) = sensed.dynamic_partitions_requests
        instance.add_dynamic_partitions(PARTITIONS, list(add.partition_keys))
        result = defs.resolve_job_def("candidate_job").execute_in_process(
            partition_key=request.partition_key, instance=instance, raise_on_error=False
        )
    return db, tmp_path / "artifacts", agents, request, result


def test_the_requested_run_evaluates_both_on_identical_tasks_and_the_gate_blocks(
    candidate_evaluation,
):
    """The sensor's run evaluates the candidate and the baseline on the same task ids, and the
    regression gate blocks it, naming harbor."""
    db, _, _, request, result = candidate_evaluation
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    gate = checks["regression_gate"]
    assert not gate.passed
    assert any(r.startswith("site=harbor:") for r in gate.metadata["reasons"].value)
    assert checks["compliance_gate"].passed
    with duckdb.connect(str(db), read_only=True) as con:
        ids = dict(
            con.execute(
                """SELECT role, list(DISTINCT task_id ORDER BY task_id)
                   FROM newsbench.candidate_runs WHERE counted GROUP BY role"""
            ).fetchall()
        )
        decision = con.execute(
            "SELECT verdict, candidate_version, n_tasks FROM newsbench.release_decision"
        ).fetchall()
        # The replay-backed regression tasks ran like the live ones, labelled as replayed,
        # with their recording and replay log stored next to the run.
        replayed = con.execute(
            """SELECT r.role, s.intent, s.success, json_extract_string(r.replay, '$.recording'),
                      json_array_length(json_extract(r.replay, '$.log'))
               FROM newsbench.candidate_scores s JOIN newsbench.candidate_runs r USING (run_id)
               WHERE s.replayed AND r.counted"""
        ).fetchall()
    assert ids["candidate"] == ids["baseline"] and len(ids["candidate"]) >= 5
    assert {(role, intent) for role, intent, *_ in replayed} >= {
        ("candidate", "find_top_headline"),
        ("baseline", "find_top_headline"),
    }
    assert all(rec.endswith("harbor-2026-12-01.warc.gz") and n > 0 for *_, rec, n in replayed)
    assert all(ok for role, _, ok, *_ in replayed if role == "baseline")
    assert decision == [("block", request.partition_key, len(ids["candidate"]))]
    with duckdb.connect(str(db), read_only=True) as con:
        (seq,) = con.execute("SELECT sequential FROM newsbench.release_decision").fetchone()
        looks = con.execute("SELECT DISTINCT look FROM newsbench.candidate_scores").fetchall()
    seq = json.loads(seq)
    # The regression is plain at the first look: it stops there, the budget left unspent.
    assert (seq["look"], seq["stopped"], looks) == (1, "decided", [(1,)])
    assert seq["runs_spent"] < seq["budget_runs"]

    # The analysts' release-gate SQL (BigQuery dialect, run here on DuckDB) reads the same
    # numbers off candidate_scores as the decision asset did.
    from newsbench_dagster.core.analytics.analyst_sql import run_view

    sql = run_view(db, "release_gate", {"candidate_version": request.partition_key})
    harbor = sql[sql["site"] == "harbor"].iloc[0]
    with duckdb.connect(str(db), read_only=True) as con:
        (slices,) = con.execute("SELECT slices FROM newsbench.release_decision").fetchone()
    site = next(s for s in json.loads(slices) if s["kind"] == "site" and s["value"] == "harbor")
    assert harbor["candidate_success"] == pytest.approx(site["candidate"]["success"], abs=1e-4)
    assert harbor["baseline_success"] == pytest.approx(site["baseline"]["success"], abs=1e-4)
    assert harbor["paired_delta"] == pytest.approx(site["diff"]["diff"], abs=1e-4)
    assert harbor["n_paired_tasks"] == site["diff"]["n_tasks"]


def test_the_cli_gate_decides_as_the_pipeline_did_on_the_same_stored_runs(candidate_evaluation):
    """`newsbench gate --from-warehouse --recompute` decides again from the runs and scores the
    candidate job stored, with the same policy options: the same verdict, policy, reasons and
    slices as the pipeline's release_decision. A different policy gives a different decision,
    and the gate says the stored verdict differs."""
    from typer.testing import CliRunner

    from newsbench_dagster.cli import app
    from newsbench_dagster.core.release.policy import Policy

    db, artifacts, agents, request, _ = candidate_evaluation
    with duckdb.connect(str(db), read_only=True) as con:
        verdict, policy, reasons, slices, sequential = con.execute(
            "SELECT verdict, policy, reasons, slices, sequential FROM newsbench.release_decision"
        ).fetchone()
    stored = {"policy": json.loads(policy), "reasons": json.loads(reasons)}
    base = [
        *("gate", "--candidate", request.partition_key, "--agents", str(agents)),
        *("--from-warehouse", "--recompute", "--json"),
        *("--database", str(db), "--artifacts", str(artifacts)),
    ]
    same = CliRunner().invoke(app, [*base, *GATE_OPTIONS])
    assert same.exit_code == 1, same.output  # block, as stored
    decision = json.loads(same.stdout[same.stdout.index("{") :])
    assert decision["verdict"] == verdict == "block"
    assert decision["policy"] == stored["policy"]
    assert decision["policy"] == ReleaseResource(**RELEASE_CONFIG).policy().as_dict()
    assert decision["reasons"] == stored["reasons"]
    assert decision["slices"] == json.loads(slices)
    assert decision["sequential"] == json.loads(sequential)  # the same looks, the same budget
    assert "stored decision" not in same.stderr

    # Without options, the gate decides with the policy's defaults, the release resource's.
    other = CliRunner().invoke(app, base)
    decision = json.loads(other.stdout[other.stdout.index("{") :])
    assert decision["policy"] == Policy().as_dict() == ReleaseResource().policy().as_dict()
    assert decision["policy"] != stored["policy"]

    # A stored verdict the runs do not support is named: the recomputed decision says so.
    tampered = db.with_name("tampered.duckdb")
    shutil.copy(db, tampered)
    with duckdb.connect(str(tampered)) as con:
        con.execute("UPDATE newsbench.release_decision SET verdict = 'pass'")
    args = [*base, *GATE_OPTIONS]
    args[args.index(str(db))] = str(tampered)
    flagged = CliRunner().invoke(app, args)
    assert flagged.exit_code == 1 and "was pass; with this policy it is block" in flagged.stderr
