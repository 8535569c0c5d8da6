"""Compliance gate: no request of any run left the allowlist or fetched a robots-disallowed URL."""

import pandas as pd
from dagster import AssetCheckResult, AssetCheckSeverity, MetadataValue, asset_check

from newsbench_dagster.assets.runs import agent_runs
from newsbench_dagster.core.compliance import violations
from newsbench_dagster.core.tables import loads
from newsbench_dagster.partitions import site_day_partitions


@asset_check(
    asset=agent_runs,
    blocking=True,
    partitions_def=site_day_partitions,
    description="No request left the allowlist; no robots-disallowed URL was fetched.",
)
def compliance(agent_runs: pd.DataFrame) -> AssetCheckResult:
    found, attempts = [], 0
    for run_id, log, events in zip(
        agent_runs["run_id"], agent_runs["request_log"], agent_runs["safety_events"], strict=True
    ):
        found += [{**v, "run_id": run_id} for v in violations(loads(log) or [])]
        attempts += len(loads(events) or [])
    return AssetCheckResult(
        passed=not found,
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "violations": len(found),
            "blocked_attempts": attempts,
            "examples": MetadataValue.json(found[:10]),
        },
        description=None
        if not found
        else f"{len(found)} request(s) went out in breach of policy, e.g. {found[0]['url']} "
        f"({found[0]['violation']}) in run {found[0]['run_id']}",
    )
