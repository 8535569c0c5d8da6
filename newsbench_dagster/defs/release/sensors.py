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

_UNFINISHED = [
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
]


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


@sensor(
    job=candidate_job,
    minimum_interval_seconds=30,
    # Off by default like the registry sensor; without it, materializing the partition again
    # runs the next look.
    default_status=DefaultSensorStatus.STOPPED,
    description="Run the next look of every candidate evaluation whose evidence is still "
    "insufficient.",
)
def release_looks(context: SensorEvaluationContext, artifacts: ArtifactStoreResource):
    store = artifacts.store()
    requests, busy = [], []
    for version in context.instance.get_dynamic_partitions(agent_version_partitions.name):
        look = look_due(store, version)
        if look is None:
            continue
        running = context.instance.get_runs(
            RunsFilter(
                job_name=candidate_job.name,
                tags={"dagster/partition": version},
                statuses=_UNFINISHED,
            ),
            limit=1,
        )
        if running:  # that run is the look (or takes it up): never two at once
            busy.append(version)
            continue
        requests.append(
            RunRequest(
                # One run per look: a look whose run failed is not requested again (launch the
                # partition to take it up where it stopped).
                run_key=f"{version}#look{look}",
                partition_key=version,
                tags={"newsbench/trigger": "release_looks", "newsbench/look": str(look)},
            )
        )
    if not requests:
        running = f" ({len(busy)} running now)" if busy else ""
        return SkipReason(f"no candidate evaluation has a look due{running}")
    return SensorResult(run_requests=requests)
