"""The drift gate's table: per site and day, did the site change under us (template, feed
volume), and did the baseline's success follow? The logic is `core.analytics.drift`; this asset
fetches the front page, reads the partition's feed items and scores, and keeps the site's
history.

Earlier days are read from a per-site history in the artifact store
(`drift/{site}/history.json`, day -> fingerprint, feed count, baseline success, drifted), not
from the table itself: no self-dependency, and a backfill or a re-materialization only ever
compares a day with the days before it.
"""

from datetime import UTC, datetime

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue

from newsbench_dagster.core.analytics.drift import (
    assess,
    baseline_success,
    feed_volume,
    from_history,
    history_entry,
    template_fingerprint,
)
from newsbench_dagster.core.analytics.tables import frame, records
from newsbench_dagster.core.web.network import Fetcher
from newsbench_dagster.defs.partitions import partition_of, site_day_asset
from newsbench_dagster.resources import (
    AgentRegistryResource,
    ArtifactStoreResource,
    NewsroomResource,
    SiteRegistryResource,
)


def history_key(site: str) -> str:
    return f"drift/{site}/history.json"


def front_page(site, fetcher: Fetcher, items: list[dict], store) -> tuple[bytes, str]:
    """The front page's bytes, fetched now; if that fails, the copy the partition's poll kept.
    Returns (bytes, where they came from)."""
    res = fetcher.fetch(site.home)
    if res.ok and res.content:
        return res.content, site.home
    kept = [r["raw_uri"] for r in items if r["kind"] == "homepage" and r.get("raw_uri")]
    for uri in dict.fromkeys(kept):
        try:
            return store.get(uri), uri
        except (OSError, ValueError):
            continue
    return b"", f"{site.home} ({res.error or f'HTTP {res.status}'})"


@site_day_asset()
def site_drift(
    context: AssetExecutionContext,
    feed_items: pd.DataFrame,
    run_scores: pd.DataFrame,
    sites: SiteRegistryResource,
    newsroom: NewsroomResource,
    artifacts: ArtifactStoreResource,
    agents: AgentRegistryResource,
) -> pd.DataFrame:
    """One row per site and day: the front page's template fingerprint against the previous
    day's, the feed volume against recent days, the baseline's success against its previous
    day, and whether the site is drifted (excluded from gating until the baseline recovers)."""
    site_key, day = partition_of(context)
    registry = sites.load()
    site = registry.get(site_key)
    store = artifacts.store()
    items = records(feed_items, "feed_items")
    routing = newsroom.world(registry.allowed_origins).routing
    with Fetcher(routing, registry.allowed_origins, min_interval=site.min_intervals()) as fetcher:
        html, page_source = front_page(site, fetcher, items, store)
    fingerprint = template_fingerprint(html) if html else None

    versions = sorted(m.agent_version for m in agents.main_channel(warn=context.log.warning))
    baseline_version = ", ".join(versions) or None
    history = store.read_json(history_key(site_key)) or {}
    earlier = from_history(history, day, baseline_version)
    row = assess(
        site_key,
        day,
        fingerprint,
        earlier["previous_fingerprint"],
        feed_volume(items),
        earlier["feed_history"],
        baseline_version,
        baseline_success(records(run_scores, "run_scores"), versions),
        earlier["baseline_previous_success"],
        previous=earlier["previous"],
        checked_at=datetime.now(UTC),
    )
    # Read again just before writing: another day of this site may have finished meanwhile.
    history = {
        **(store.read_json(history_key(site_key)) or {}),
        day.isoformat(): history_entry(row),
    }
    store.put_json(history_key(site_key), dict(sorted(history.items())))

    if row["drifted"]:
        context.log.warning(" ".join(row["reasons"]))
    context.add_output_metadata(
        {
            "fingerprint": row["fingerprint"] or "",
            "previous_fingerprint": row["previous_fingerprint"] or "",
            "page": page_source,
            "template_changed": row["template_changed"],
            "feed_items": row["feed_items"],
            "feed_z": row["feed_z"],
            "volume_anomaly": row["volume_anomaly"],
            "baseline_delta": row["baseline_delta"],
            "drifted": row["drifted"],
            "reasons": MetadataValue.md("\n".join(f"- {r}" for r in row["reasons"]) or "no change"),
        }
    )
    return frame("site_drift", [row])
