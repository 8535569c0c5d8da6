"""Artifacts in object storage by config: any fsspec URL (here fsspec's own in-memory
filesystem, the one object store that runs offline) behind the store the harness writes to;
a folder stays the default."""

from __future__ import annotations

import copy
import uuid

import fsspec
import pytest

from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent
from newsbench_dagster.core.artifacts import (
    FsspecArtifactStore,
    LocalArtifactStore,
    artifact_store,
)
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.resources.artifacts import ArtifactStoreResource


@pytest.fixture
def bucket():
    root = f"memory://bucket-{uuid.uuid4().hex[:8]}/newsbench"
    yield root
    fs = fsspec.filesystem("memory")
    if fs.exists(root):
        fs.rm(root, recursive=True)


def test_objects_round_trip_under_the_url(bucket):
    store = ArtifactStoreResource(root=bucket).store()
    assert isinstance(store, FsspecArtifactStore)
    uri = store.put("runs/harbor/r1/screenshot.png", b"\x89PNG")
    assert uri.startswith("memory://") and uri.endswith("/newsbench/runs/harbor/r1/screenshot.png")
    assert store.get(uri) == b"\x89PNG"
    assert fsspec.open(uri, "rb").open().read() == b"\x89PNG"  # a real object, not a file
    store.put_json("runs/harbor/r1/run.json", {"ok": True})
    assert store.read_json("runs/harbor/r1/run.json") == {"ok": True}
    assert store.read_json("runs/harbor/r1/missing.json") is None


@pytest.mark.parametrize("key", ["../escape", "/abs", "a//b", "a/./b", ""])
def test_a_key_cannot_leave_the_prefix(bucket, key):
    with pytest.raises(ValueError, match="escapes the store"):
        artifact_store(bucket).put(key, b"x")


def test_an_object_of_another_store_is_refused(bucket):
    with pytest.raises(ValueError, match="not an artifact of this store"):
        artifact_store(bucket).get("memory://elsewhere/secret")


def test_an_artifacts_key_is_found_from_its_uri_in_its_own_store_only(bucket, tmp_path):
    """What a run's judgement is written beside: its run.json's key, from the URI its row
    holds; another store's URI, or one that climbs out, has none here."""
    for store in (artifact_store(bucket), artifact_store(tmp_path / "a")):
        uri = store.put("runs/harbor/d/r1/run.json", b"{}")
        assert store.key_of(uri) == "runs/harbor/d/r1/run.json"
        assert store.key_of(store.uri("x/y.json")) == "x/y.json"
    assert artifact_store(bucket).key_of("memory://elsewhere/runs/r1/run.json") is None
    assert artifact_store(bucket).key_of(f"{bucket}/../x/run.json") is None
    assert artifact_store(tmp_path / "a").key_of((tmp_path / "b" / "run.json").as_uri()) is None
    assert artifact_store(tmp_path / "a").key_of("gs://bucket/run.json") is None


def test_folders_stay_local_and_unknown_schemes_are_named(tmp_path):
    assert isinstance(artifact_store(tmp_path), LocalArtifactStore)
    assert isinstance(artifact_store(tmp_path.as_uri()), LocalArtifactStore)
    with pytest.raises(ValueError, match="nosuch://bucket"):
        artifact_store("nosuch://bucket/x")


def test_a_real_run_writes_its_artifacts_to_the_bucket(harbor_today, browser_options, bucket):
    day, tasks, robots = harbor_today
    runner = Runner(
        [build_agent(AgentManifest(name="reference", version="1", adapter="reference"))],
        options=browser_options,
        robots=robots,
        store=artifact_store(bucket),
        settings=RunSettings(artifacts=("screenshot",), concurrency=1),
    )
    rows = run_tasks(copy.deepcopy(tasks[:1]), day, runner)
    art = rows[0]["artifacts"]
    name = bucket.split("://", 1)[1]
    assert name in art["run"] and name in art["screenshot"]
    assert all(uri.startswith("memory://") for uri in art.values() if uri)
    saved = fsspec.open(art["run"], "rb").open().read()
    assert rows[0]["run_id"].encode() in saved
    assert fsspec.open(art["screenshot"], "rb").open().read().startswith(b"\x89PNG")
