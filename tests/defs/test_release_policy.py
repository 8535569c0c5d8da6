"""One release policy for every caller: the Dagster resource mirrors `Policy` field for field
with its defaults, and the sensor skips, by name, a candidate the baseline rule cannot serve."""

from __future__ import annotations

from dagster import SkipReason, instance_for_test

from newsbench_dagster.core.release.policy import Policy
from newsbench_dagster.defs.release.sensors import agent_registry
from newsbench_dagster.resources import AgentRegistryResource, ReleaseResource
from tests.support.evaluate import sensor_tick


def test_the_resource_is_the_policy_with_its_defaults():
    assert set(ReleaseResource.model_fields) - {"suites_dir"} == set(Policy.model_fields)
    assert ReleaseResource().policy() == Policy()
    for name, field in Policy.model_fields.items():
        mirrored = ReleaseResource.model_fields[name]
        assert mirrored.default == field.default, name
        assert mirrored.description == field.description, name
    assert ReleaseResource(trials=5, margin=-0.05).policy() == Policy(trials=5, margin=-0.05)


def test_the_sensor_skips_a_candidate_without_a_baseline_and_says_why(tmp_path):
    (tmp_path / "a.yaml").write_text(
        "name: alpha\nversion: '1'\nadapter: reference\nchannel: main\n"
    )
    (tmp_path / "b.yaml").write_text(
        "name: beta\nversion: '1'\nadapter: reference\nchannel: main\n"
    )
    (tmp_path / "c.yaml").write_text("name: gamma\nversion: '1'\nadapter: reference\n")
    agents = AgentRegistryResource(directory=str(tmp_path))
    with instance_for_test() as instance:
        skipped = sensor_tick(
            agent_registry,
            instance=instance,
            resources={"agents": agents, "release": ReleaseResource()},
        )
        assert isinstance(skipped, SkipReason)
        assert "gamma@1+" in skipped.skip_message and "2 main-channel" in skipped.skip_message
        (request,) = sensor_tick(
            agent_registry,
            instance=instance,
            resources={"agents": agents, "release": ReleaseResource(baseline="beta")},
        ).run_requests
        assert request.partition_key.startswith("gamma@1+")
