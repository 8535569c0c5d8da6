"""The agent registry sensor: a new or changed candidate manifest in `agents/` becomes an
`agent_version` partition and a candidate evaluation run. The release looks sensor: an
evaluation whose evidence is still insufficient after a look gets a run for its next look.

A version is `name@version+hash` of what makes the agent behave, so an edited manifest is a
new version; the run key is the version, so an unchanged one is never evaluated twice. A
candidate with no baseline by the release policy's rule is skipped, and named; so is a broken
manifest (invalid YAML, a missing field, an unknown adapter), in the skip reason and the log,
while the other manifests' candidates are evaluated.
"""

from dagster import (
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from newsbench_dagster.core.errors import ConfigError
from newsbench_dagster.core.release.looks import look_due
from newsbench_dagster.defs.partitions import agent_version_partitions
from newsbench_dagster.defs.release.jobs import candidate_job
from newsbench_dagster.resources import (
    AgentRegistryResource,
    ArtifactStoreResource,
    ReleaseResource,
)
from newsbench_dagster.run_health import attempt_running


@sensor(
    job=candidate_job,
    minimum_interval_seconds=60,
    # Off by default: on one machine a candidate evaluation holds the only run slot for
    # minutes; a deployment switches it on once (UI: Automation).
    default_status=DefaultSensorStatus.STOPPED,
    description="Evaluate every new candidate agent version against the baseline.",
)
def agent_registry(
    context: SensorEvaluationContext, agents: AgentRegistryResource, release: ReleaseResource
):
    found = agents.scan()  # a broken manifest is set aside and named; the others go on
    broken = found.warnings()
    for problem in broken:
        context.log.warning(problem)
    manifests = found.manifests
    known = set(context.instance.get_dynamic_partitions(agent_version_partitions.name))
    new, unmatched = [], []
    for m in manifests:
        if m.channel != "candidate" or m.agent_version in known:
            continue
        try:
            release.baseline_for(m, manifests)
        except ConfigError as e:  # the same rule the evaluation will apply
            unmatched.append(str(e))
            continue
        new.append(m)
    for problem in unmatched:
        context.log.warning(problem)
    if not new:
        why = f"no new candidate among {len(manifests)} manifest(s)"
        return SkipReason("; ".join([why, *unmatched, *broken]))
    versions = [m.agent_version for m in new]
    return SensorResult(
        run_requests=[
            RunRequest(
                run_key=m.agent_version,
                partition_key=m.agent_version,
                tags={"newsbench/trigger": "agent_registry", "newsbench/agent": m.name},
            )
            for m in new
        ],
        dynamic_partitions_requests=[agent_version_partitions.build_add_request(versions)],
    )


# A look whose runs failed or died this many times in a row is left to a person.
LOOK_ATTEMPTS = 3


@sensor(
    job=candidate_job,
    minimum_interval_seconds=30,
    # Off by default like the registry sensor; without it, materializing the partition again
    # runs the next look.
    default_status=DefaultSensorStatus.STOPPED,
    description="Run the next look of every candidate evaluation whose evidence is still "
    "insufficient, and take up a look whose run failed or died (up to 3 times).",
)
def release_looks(context: SensorEvaluationContext, artifacts: ArtifactStoreResource):
    store = artifacts.store()
    instance = context.instance
    requests, notes = [], []
    for version in instance.get_dynamic_partitions(agent_version_partitions.name):
        look = look_due(store, version)
        if look is None:
            continue
        recent = instance.get_runs(
            RunsFilter(job_name=candidate_job.name, tags={"dagster/partition": version}),
            limit=LOOK_ATTEMPTS,
        )
        if recent and attempt_running(instance, recent[0].run_id):
            notes.append(f"{version}: a run is at work")  # never two at once
            continue
        broken = [r for r in recent if r.status != DagsterRunStatus.SUCCESS]
        key = f"{version}#look{look}"
        if recent and recent[0].status != DagsterRunStatus.SUCCESS:
            # The last run failed or died (a killed one stays STARTED): take its look up
            # again, where it stopped (`core.release.looks.resume`), under a key of its own.
            if len(broken) >= LOOK_ATTEMPTS:
                notes.append(
                    f"{version}: look {look} failed {LOOK_ATTEMPTS} times in a row "
                    "(see its runs; launch the partition to try again)"
                )
                continue
            key += f"#after-{recent[0].run_id[:8]}"
        requests.append(
            RunRequest(
                run_key=key,
                partition_key=version,
                tags={"newsbench/trigger": "release_looks", "newsbench/look": str(look)},
            )
        )
    if not requests:
        return SkipReason("; ".join(["no candidate evaluation has a look due", *notes]))
    for note in notes:
        context.log.info(note)
    return SensorResult(run_requests=requests)
