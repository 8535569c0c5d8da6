"""Drift gate: alert when a site changed under us (template, feed volume) or its baseline
fell with it. Not blocking: a drifted site is excluded from gating (see `core.analytics.drift`), the
pipeline goes on."""

import pandas as pd
from dagster import AssetCheckResult, AssetCheckSeverity, MetadataValue

from newsbench_dagster.core.analytics.tables import records
from newsbench_dagster.defs.partitions import site_day_check


@site_day_check(
    asset="site_drift",
    blocking=False,
    description="The site's template, feed volume and baseline success held since the day "
    "before; warns (never blocks) when one moved, naming the site and the numbers.",
)
def drift(site_drift: pd.DataFrame) -> AssetCheckResult:
    rows = records(site_drift, "site_drift")
    flagged = [r for r in rows if r["drifted"] or r["template_changed"] or r["volume_anomaly"]]
    sites = sorted({r["site"] for r in flagged})
    reasons = [reason for r in flagged for reason in (r["reasons"] or [])]
    drifted = sorted({r["site"] for r in flagged if r["drifted"]})
    return AssetCheckResult(
        passed=not flagged,
        severity=AssetCheckSeverity.WARN,
        metadata={
            "sites": MetadataValue.json(sites),
            "drifted": MetadataValue.json(drifted),
            "template_changed": any(bool(r["template_changed"]) for r in rows),
            "volume_anomaly": any(bool(r["volume_anomaly"]) for r in rows),
            "reasons": MetadataValue.md("\n".join(f"- {r}" for r in reasons) or "none"),
        },
        description=None
        if not flagged
        else f"{', '.join(sites)}: "
        + ("drifted, excluded from gating. " if drifted else "changed, still gated. ")
        + " ".join(reasons),
    )
