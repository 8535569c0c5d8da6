"""One broken manifest in agents/ (invalid YAML, a missing field, an unknown adapter) is skipped
and reported, never fatal to the other agents: the release sensor evaluates the other
candidates and names it in its skip reason, the nightly `agent_runs` runs the main channel that
is left (real Dagster materialization, real Chromium) with a warning check listing it, and
`agents list` shows it as broken. Only when no main-channel agent is left is it an error, naming
the files."""

from __future__ import annotations

import shutil

import pytest
from dagster import (
    AssetCheckSeverity,
    MultiPartitionKey,
    SkipReason,
    instance_for_test,
    materialize,
)
from typer.testing import CliRunner

from newsbench_dagster.cli import app
from newsbench_dagster.core.errors import ConfigError
from newsbench_dagster.definitions import ASSETS
from newsbench_dagster.defs.evaluation.checks import agent_manifests
from newsbench_dagster.defs.partitions import agent_version_partitions
from newsbench_dagster.defs.release.sensors import agent_registry
from newsbench_dagster.paths import AGENTS_DIR
from newsbench_dagster.resources import AgentRegistryResource, ReleaseResource, TaskSetResource
from tests.support.evaluate import sensor_tick
from tests.support.newsroom_clock import frozen_now
from tests.support.pipeline_resources import local_resources

BAD_YAML = "name: broken-yaml\nversion: [1\nadapter: reference\n"
NO_VERSION_MAIN = "name: half-main\nadapter: reference\nchannel: main\n"
UNKNOWN_ADAPTER = "name: ghost\nversion: '1'\nadapter: no_such_adapter\n"


def agents_dir(tmp_path, *good: str, **broken: str):
    folder = tmp_path / "agents"
    folder.mkdir()
    for name in good:
        shutil.copy(AGENTS_DIR / f"{name}.yaml", folder)
    for name, text in broken.items():
        (folder / f"{name}.yaml").write_text(text)
    return folder


def test_the_sensor_evaluates_the_other_candidates_and_names_the_broken(tmp_path):
    folder = agents_dir(
        tmp_path, "reference", "selector-baseline", bad=BAD_YAML, ghost=UNKNOWN_ADAPTER
    )
    resources = {
        "agents": AgentRegistryResource(directory=str(folder)),
        "release": ReleaseResource(),
    }
    with instance_for_test() as instance:
        result = sensor_tick(agent_registry, instance_ref=instance.get_ref(), resources=resources)
        # The valid new candidate is evaluated (it was "agent manifests unreadable" before).
        (request,) = result.run_requests
        assert request.partition_key.startswith("selector-baseline@0.1.0+")
        instance.add_dynamic_partitions(agent_version_partitions.name, [request.partition_key])

        # Nothing new left: the skip reason names each broken file and its error.
        again = sensor_tick(agent_registry, instance=instance, resources=resources)
        assert isinstance(again, SkipReason)
        reason = again.skip_message
        assert "no new candidate among 2 manifest(s)" in reason
        assert f"{folder / 'bad.yaml'}: not valid YAML: line 3" in reason
        assert f"{folder / 'ghost.yaml'}: adapter: unknown adapter 'no_such_adapter'" in reason


def test_the_registry_skips_a_broken_main_agent_loudly_and_fails_when_none_is_left(tmp_path):
    folder = agents_dir(tmp_path, "reference", half=NO_VERSION_MAIN, ghost=UNKNOWN_ADAPTER)
    said: list[str] = []
    (m,) = AgentRegistryResource(directory=str(folder)).main_channel(warn=said.append)
    assert m.name == "reference"
    assert said == [
        f"broken agent manifest skipped: {folder / 'ghost.yaml'}: adapter: unknown adapter "
        "'no_such_adapter' (no module newsbench_dagster.core.agents.adapters.no_such_adapter)",
        "BROKEN MAIN-CHANNEL agent manifest skipped, its runs are missing: "
        f"{folder / 'half.yaml'}: version: Field required",
    ]
    (folder / "reference.yaml").unlink()
    with pytest.raises(ConfigError, match="no main-channel agent left") as e:
        AgentRegistryResource(directory=str(folder)).main_channel(warn=said.append)
    assert str(folder / "half.yaml") in str(e.value)
    # A file that cannot be parsed at all may have been a main agent: the same error.
    (folder / "half.yaml").write_bytes(b"\xff\xfe not text")
    with pytest.raises(ConfigError, match="half.yaml:1: not UTF-8 text"):
        AgentRegistryResource(directory=str(folder)).main_channel(warn=said.append)


def test_agents_list_shows_the_broken_manifests(tmp_path):
    folder = agents_dir(tmp_path, "reference", bad=BAD_YAML, half=NO_VERSION_MAIN)
    result = CliRunner().invoke(
        app, ["agents", "list", "--directory", str(folder)], env={"COLUMNS": "250"}
    )
    assert result.exit_code == 1, result.output
    assert "reference@0.1.0+" in result.output
    assert "BROKEN bad.yaml" in result.output and "BROKEN half.yaml" in result.output
    assert "version: Field required" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.heavy(20)
def test_agent_runs_runs_the_main_channel_left_and_a_warning_check_lists_the_broken(
    newsroom, tmp_path
):
    folder = agents_dir(
        tmp_path, "reference", "selector-baseline", bad=BAD_YAML, half=NO_VERSION_MAIN
    )
    resources = local_resources(
        tmp_path / "wh.duckdb",
        tmp_path / "artifacts",
        port=newsroom.port,
        seed=newsroom.newsroom.seed,
        agents=AgentRegistryResource(directory=str(folder)),
        tasks=TaskSetResource(intents=["find_top_headline"]),
    )
    with frozen_now(newsroom), instance_for_test() as instance:
        result = materialize(
            [*ASSETS, agent_manifests],
            selection=["feed_items", "news_tasks", "agent_runs"],
            partition_key=MultiPartitionKey(
                {"site": "harbor", "day": newsroom.clock().date().isoformat()}
            ),
            resources=resources,
            instance=instance,
            raise_on_error=False,
        )
        warnings = [
            e.user_message
            for e in instance.all_logs(result.run_id)
            if "agent manifest skipped" in (e.user_message or "")
        ]

    assert result.success
    runs = result.output_for_node("agent_runs")
    assert len(runs) >= 1 and set(runs["agent_name"]) == {"reference"}
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == "agent_manifests" and not check.passed
    assert check.severity == AssetCheckSeverity.WARN
    listed = check.metadata["broken"].value
    assert [(b["file"], b["channel"]) for b in listed] == [
        (str(folder / "bad.yaml"), "candidate"),
        (str(folder / "half.yaml"), "main"),
    ]
    assert any(w.startswith("BROKEN MAIN-CHANNEL") and "half.yaml" in w for w in warnings)
