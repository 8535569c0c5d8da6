"""A real model (SmolLM2-135M-Instruct on llama.cpp's server, started by the harness) through
the whole product, not only `agents try`: picked up by the registry sensor as a candidate and
decided by the release gate against the reference baseline; and opted in as a second agent of
the nightly job, its KPIs beside the reference's. Real Dagster runs, Chromium, DuckDB.

Needs the `local-model` extra (see tests/core/agents/test_local_model.py for the skip rule)."""

from __future__ import annotations

import json
import shutil
from datetime import date

import duckdb
import pytest
import yaml
from dagster import MultiPartitionKey, instance_for_test

from newsbench_dagster.definitions import RESOURCES_LOCAL, build_definitions
from newsbench_dagster.defs.release.sensors import agent_registry
from newsbench_dagster.paths import AGENTS_DIR
from newsbench_dagster.resources import (
    AgentRegistryResource,
    ArtifactStoreResource,
    BrowserResource,
    NewsroomResource,
    ReleaseResource,
    TaskSetResource,
    duckdb_warehouse,
)
from tests.support.evaluate import sensor_tick
from tests.support.local_model import require_local_model

pytestmark = pytest.mark.heavy(120)

require_local_model()

MODEL = "smollm2-tools"


def _defs(tmp_path, newsroom_server, agents, **resources):
    return build_definitions(
        {
            **RESOURCES_LOCAL,
            "io_manager": duckdb_warehouse(str(tmp_path / "wh.duckdb")),
            "newsroom": NewsroomResource(
                port=newsroom_server.port, seed=newsroom_server.newsroom.seed
            ),
            "browser": BrowserResource(artifacts=[], screenshot=False),
            "artifacts": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
            "agents": agents,
            **resources,
        }
    )


def _agents_dir(tmp_path):
    """The reference and the shipped model manifest, the model's runs kept short: what is
    tested is the product around a real model, not its reading (each of its prompt tokens costs
    ~8 ms of a core here; three turns of at most 64 tokens end a run in seconds)."""
    agents = tmp_path / "agents"
    agents.mkdir()
    shutil.copy(AGENTS_DIR / "reference.yaml", agents)
    manifest = yaml.safe_load((AGENTS_DIR / f"{MODEL}.yaml").read_text())
    manifest["params"].update(max_turns=3, max_completion_tokens=64)
    (agents / f"{MODEL}.yaml").write_text(yaml.safe_dump(manifest))
    return agents


def test_the_sensor_picks_the_model_up_and_the_gate_decides_it_with_reasons(
    newsroom_server, tmp_path
):
    registry = AgentRegistryResource(directory=str(_agents_dir(tmp_path)))
    empty = tmp_path / "no-suites"
    empty.mkdir()
    # A small evaluation (three held-out tasks, one trial, one look): minutes of a 135M model.
    release = ReleaseResource(
        suites_dir=str(empty),
        sites=["harbor"],
        intents=["find_top_headline", "extract_article_metadata"],
        heldout_n=3,
        trials=1,
        max_reruns=0,
        max_looks=1,
    )
    defs = _defs(tmp_path, newsroom_server, registry, release=release)
    with instance_for_test() as instance:
        sensed = sensor_tick(
            agent_registry, instance=instance, resources={"agents": registry, "release": release}
        )
        (request,) = sensed.run_requests
        assert request.partition_key.startswith(f"{MODEL}@")
        (add,) = sensed.dynamic_partitions_requests
        instance.add_dynamic_partitions("agent_version", list(add.partition_keys))
        result = defs.resolve_job_def("candidate_job").execute_in_process(
            partition_key=request.partition_key, instance=instance, raise_on_error=False
        )
    with duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True) as con:
        (verdict, reasons, model, adapter, baseline, n_tasks) = con.execute(
            "SELECT verdict, reasons, model, adapter, baseline_version, n_tasks "
            "FROM newsbench.release_decision"
        ).fetchone()
        classes = con.execute(
            "SELECT r.role, s.failure_class, r.env_failure FROM newsbench.candidate_runs r "
            "JOIN newsbench.candidate_scores s USING (run_id) WHERE r.counted"
        ).fetchall()
    assert verdict in ("pass", "block", "insufficient_evidence")
    assert json.loads(reasons), "a decision without its reasons"
    assert (model, adapter) == ("smollm2", "openai_tools")
    assert baseline.startswith("reference@") and n_tasks == 3
    # The model's runs were scored or classified as its own failures, never the environment's.
    mine = [(c, e) for role, c, e in classes if role == "candidate"]
    assert len(mine) == 3 and all(e is None for _, e in mine), mine
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert "regression_gate" in checks


def test_opted_in_beside_the_reference_in_the_nightly_job_with_its_own_kpis(
    newsroom_server, tmp_path
):
    registry = AgentRegistryResource(directory=str(_agents_dir(tmp_path)), also_run=[MODEL])
    defs = _defs(
        tmp_path, newsroom_server, registry, tasks=TaskSetResource(intents=["find_top_headline"])
    )
    day = newsroom_server.now().date()
    with instance_for_test() as instance:
        site_day = defs.resolve_job_def("site_day_job").execute_in_process(
            partition_key=MultiPartitionKey({"site": "harbor", "day": day.isoformat()}),
            instance=instance,
            raise_on_error=False,
        )
        assert site_day.success
        kpis = defs.resolve_job_def("kpi_job").execute_in_process(
            partition_key=day.isoformat(), instance=instance
        )
        assert kpis.success
    db = tmp_path / "wh.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        runs = con.execute(
            "SELECT agent_name, env_failure FROM newsbench.agent_runs ORDER BY 1"
        ).fetchall()
        agents = {
            v
            for (v,) in con.execute(
                "SELECT DISTINCT agent_version FROM newsbench.kpi_daily "
                "WHERE site = '*' AND slice_kind = 'all'"
            ).fetchall()
        }
    assert [a for a, _ in runs] == ["reference", MODEL]
    assert all(e is None for _, e in runs), runs
    assert {a.split("@")[0] for a in agents} == {"reference", MODEL}

    # The KPI table people read lists both.
    from newsbench_dagster.core.analytics.warehouse import kpi_overall

    rows = kpi_overall(db, date.fromisoformat(day.isoformat()))
    assert {r["agent_version"].split("@")[0] for r in rows} >= {"reference", MODEL}
