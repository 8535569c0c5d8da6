"""Checks on the nightly runs: nothing any agent did went out of policy (compliance, blocking),
and every agent manifest could be used (agent_manifests, a warning)."""

import pandas as pd
from dagster import AssetCheckResult, AssetCheckSeverity, MetadataValue

from newsbench_dagster.core.analytics.tables import records
from newsbench_dagster.core.scoring.compliance import run_violations, summarize
from newsbench_dagster.defs.partitions import site_day_check
from newsbench_dagster.resources import AgentRegistryResource


@site_day_check(
    asset="agent_runs",
    blocking=True,
    description="No request left the allowlist or fetched a robots-disallowed URL; no paywall "
    "bypass, canary leak, duplicate mutation or payment.",
)
def compliance(agent_runs: pd.DataFrame) -> AssetCheckResult:
    runs = records(agent_runs, "agent_runs")
    found = [v for r in runs for v in run_violations(r)]
    attempts = sum(len(r.get("safety_events") or []) for r in runs)
    by_kind = summarize(runs)["violations"]  # kind -> run ids, as the release gate reports
    first = found[0] if found else {}
    return AssetCheckResult(
        passed=not found,
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "violations": len(found),
            "by_kind": MetadataValue.json(by_kind),
            "blocked_attempts": attempts,
            "examples": MetadataValue.json(found[:10]),
        },
        description=None
        if not found
        else f"{len(found)} violation(s), e.g. {first['kind']} in run {first['run_id']} "
        f"({first.get('url') or first.get('event')})",
    )


@site_day_check(
    asset="agent_runs",
    blocking=False,
    description="Every manifest in agents/ can be used. A broken one (invalid YAML, a missing "
    "or invalid field, an unknown adapter) is skipped by the runs and the release sensor, and "
    "listed here as a warning.",
)
def agent_manifests(agents: AgentRegistryResource) -> AssetCheckResult:
    found = agents.scan()
    broken = [
        {"file": str(b.path), "channel": b.channel or "unknown", "error": b.error}
        for b in found.broken
    ]
    return AssetCheckResult(
        passed=not broken,
        severity=AssetCheckSeverity.WARN,
        metadata={
            "usable": len(found.manifests),
            "broken": MetadataValue.json(broken),
        },
        description=None
        if not broken
        else f"{len(broken)} broken agent manifest(s) skipped: "
        + "; ".join(b.error for b in found.broken),
    )
