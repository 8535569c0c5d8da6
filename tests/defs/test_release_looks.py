"""One look of the sequential gate per materialization of a candidate partition (issue 50
step 2), with real Dagster materializations on a real DuckDB file, real Chromium and the
newsroom: look 1's runs and scores reach the warehouse when look 1 ends; the release looks
sensor asks for look 2; a materialization killed during look 2 (SIGKILL after its first run,
`core.crash_points`) leaves look 1's rows there once; the next one runs look 2 only, on the
tasks the killed one had drawn, and never runs look 1 again."""

from __future__ import annotations

import json
import signal

import duckdb
import pandas as pd
import pytest
import yaml
from dagster import AssetKey, DagsterInstance

from newsbench_dagster.core.crash_points import AGENT_RUN_DONE
from newsbench_dagster.core.release.plan import TaskSet, task_set_key
from newsbench_dagster.defs.release.sensors import release_looks
from newsbench_dagster.paths import AGENTS_DIR
from newsbench_dagster.resources import ArtifactStoreResource
from tests.support import candidate_run
from tests.support.evaluate import sensor_tick
from tests.support.killed import run_module

pytestmark = pytest.mark.heavy(60)  # three materializations of a small evaluation

# The reference against a renamed copy of itself on a few tasks: never decided at look 1 or 2.
RELEASE = {
    "sites": ["harbor"],
    "intents": ["find_top_headline", "extract_article_metadata"],
    "heldout_n": 3,
    "trials": 1,
    "max_reruns": 1,
    "max_looks": 4,
    "slice_min_tasks": 5,
}


@pytest.fixture
def spec(newsroom_server, tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    agents = tmp_path / "agents"
    agents.mkdir()
    reference = yaml.safe_load((AGENTS_DIR / "reference.yaml").read_text())
    (agents / "reference.yaml").write_text(yaml.safe_dump(reference))
    copy = {**reference, "name": "reference-next", "version": "0.2.0", "channel": "candidate"}
    (agents / "next.yaml").write_text(yaml.safe_dump(copy))
    from newsbench_dagster.resources import AgentRegistryResource

    (version,) = [
        m.agent_version
        for m in AgentRegistryResource(directory=str(agents)).scan().manifests
        if m.channel == "candidate"
    ]
    return {
        "db": str(tmp_path / "wh.duckdb"),
        "artifacts": str(tmp_path / "artifacts"),
        "agents": str(agents),
        "port": newsroom_server.port,
        "seed": newsroom_server.newsroom.seed,
        "release": RELEASE,
        "version": version,
    }


def _runs(spec: dict) -> pd.DataFrame:
    with duckdb.connect(spec["db"], read_only=True) as con:
        return con.execute(
            "SELECT run_id, task_id, look, role, counted FROM newsbench.candidate_runs"
        ).fetchdf()


def _decision(spec: dict) -> dict:
    with duckdb.connect(spec["db"], read_only=True) as con:
        verdict, sequential = con.execute(
            "SELECT verdict, sequential FROM newsbench.release_decision"
        ).fetchone()
    return {"verdict": verdict, **json.loads(sequential)}


def _sensor(spec: dict):
    with DagsterInstance.get() as instance:
        return sensor_tick(
            release_looks,
            instance=instance,
            resources={"artifacts": ArtifactStoreResource(root=spec["artifacts"])},
        )


def test_a_look_killed_mid_way_is_taken_up_at_that_look_and_ended_looks_never_run_again(spec):
    assert candidate_run.run(spec)
    first = _runs(spec)
    assert set(first["look"]) == {1} and first["run_id"].is_unique
    with duckdb.connect(spec["db"], read_only=True) as con:
        first_scores = con.execute(
            "SELECT run_id, success FROM newsbench.candidate_scores ORDER BY run_id"
        ).fetchall()
    decision = _decision(spec)
    assert (decision["verdict"], decision["stopped"], decision["look"]) == (
        "insufficient_evidence",
        "open",
        1,
    )
    # The sensor asks for look 2, once per look (its run key), for this partition.
    (request,) = _sensor(spec).run_requests
    assert (request.partition_key, request.run_key) == (spec["version"], f"{spec['version']}#look2")

    assert run_module("tests.support.candidate_run", spec, AGENT_RUN_DONE) == -signal.SIGKILL
    # Look 1's rows are in the warehouse once, as look 1 left them.
    killed = _runs(spec)
    assert sorted(killed["run_id"]) == sorted(first["run_id"])
    # The killed run stays STARTED in Dagster; its process is gone, so the sensor takes its
    # look up again, under a run key of its own.
    (retry,) = _sensor(spec).run_requests
    assert retry.run_key.startswith(f"{spec['version']}#look2#after-")
    assert retry.tags["newsbench/look"] == "2"
    store = ArtifactStoreResource(root=spec["artifacts"]).store()
    saved = store.read_json(task_set_key(spec["version"]))
    drawn = {t["id"] for t in TaskSet.restored(saved, []).batch_of(2)}
    assert len(drawn) == RELEASE["heldout_n"]

    assert candidate_run.run(spec)
    after = _runs(spec)
    assert after["run_id"].is_unique
    # Look 1 never ran again: its rows are the same runs...
    assert sorted(after.loc[after["look"] == 1, "run_id"]) == sorted(first["run_id"])
    # ...and this materialization ran look 2 only, on the tasks the killed one had drawn.
    second = after[after["look"] == 2]
    assert set(after["look"]) == {1, 2}
    assert set(second["task_id"]) == drawn
    counted = second[second["counted"]]
    assert len(counted) == 2 * len(drawn) * RELEASE["trials"]
    assert set(counted["role"]) == {"candidate", "baseline"}
    # Every run scored once; look 1's scores are the ones it had (kept, not scored again).
    with duckdb.connect(spec["db"], read_only=True) as con:
        scores = con.execute(
            "SELECT run_id, look, success FROM newsbench.candidate_scores ORDER BY run_id"
        ).fetchall()
    assert sorted(r for r, _, _ in scores) == sorted(after["run_id"])
    assert [(r, s) for r, k, s in scores if k == 1] == first_scores
    with DagsterInstance.get() as instance:
        latest = instance.get_latest_materialization_event(AssetKey("candidate_scores"))
    assert latest.asset_materialization.metadata["scored_now"].value == len(second)
    decision = _decision(spec)
    assert [h["look"] for h in decision["history"]] == [1, 2]
    assert decision["stopped"] == "open"  # 6 held-out tasks on one site: no decision yet
    # Look 3 is due now, after a run that succeeded: its plain key.
    (third,) = _sensor(spec).run_requests
    assert third.run_key == f"{spec['version']}#look3"


def test_a_look_that_failed_three_times_in_a_row_is_left_to_a_person(tmp_path):
    """The sensor takes a failed look up again, but not for ever: after three failed runs in
    a row it skips the partition and says so."""
    from dagster import DagsterRunStatus, instance_for_test
    from dagster._core.test_utils import create_run_for_test

    from newsbench_dagster.core.artifacts import LocalArtifactStore
    from newsbench_dagster.core.release.plan import build_task_set
    from newsbench_dagster.core.release.policy import Policy
    from newsbench_dagster.defs.partitions import agent_version_partitions

    version = "next@0.2.0+aa"
    store = LocalArtifactStore(tmp_path)
    task_set = build_task_set([], [], [], heldout_n=0, seed=0)
    task_set.progress.update(policy=Policy().as_dict(), looks_done=1, open=True)
    store.put_json(task_set_key(version), task_set.saved(version, "reference@0.1.0+bb"))
    resources = {"artifacts": ArtifactStoreResource(root=str(tmp_path))}
    with instance_for_test() as instance:
        instance.add_dynamic_partitions(agent_version_partitions.name, [version])
        for attempt in range(3):
            create_run_for_test(
                instance,
                job_name="candidate_job",
                status=DagsterRunStatus.FAILURE,
                tags={"dagster/partition": version},
            )
            result = sensor_tick(release_looks, instance=instance, resources=resources)
            if attempt < 2:
                (request,) = result.run_requests
                assert request.run_key.startswith(f"{version}#look2#after-")
        assert "look 2 failed 3 times in a row" in result.skip_message
