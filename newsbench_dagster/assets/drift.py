"""The drift gate's table: per site and day, did the site change under us (template, feed
volume), and did the baseline's success follow? The logic is `core.drift`; this asset fetches
the front page, reads the partition's feed items and scores, and keeps the site's history.

Earlier days are read from a per-site history in the artifact store
(`drift/{site}/history.json`, day -> fingerprint, feed count, baseline success, drifted), not
from the table itself: no self-dependency, and a backfill or a re-materialization only ever
compares a day with the days before it.
"""

from datetime import UTC, datetime

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue, asset

from newsbench_dagster.assets.feeds import partition_of
from newsbench_dagster.core.analytics.drift import (
    assess,
    from_history,
    history_entry,
    template_fingerprint,
)
from newsbench_dagster.core.analytics.tables import frame
from newsbench_dagster.core.web.network import Fetcher
from newsbench_dagster.partitions import SITE_DAY_EXPR, site_day_partitions
from newsbench_dagster.resources import (
    AgentRegistryResource,
    ArtifactStoreResource,
    NewsroomResource,
    SiteRegistryResource,
)


def history_key(site: str) -> str:
    return f"drift/{site}/history.json"


def feed_volume(feed_items: pd.DataFrame) -> int:
    """Items the site's feeds and sitemaps listed (the homepage's links are not feed volume)."""
    items = feed_items[feed_items["item_url"].notna() & (feed_items["kind"] != "homepage")]
    return len(items)


def baseline_success(run_scores: pd.DataFrame, versions: list[str]) -> float | None:
    """Success rate of the main-channel agents over the partition's scored (not excluded)
    runs; None when there is none."""
    mine = run_scores[run_scores["agent_version"].isin(versions)]
    scored = mine[~mine["excluded"].fillna(False).astype(bool) & mine["success"].notna()]
    return float(scored["success"].astype(bool).mean()) if len(scored) else None


def front_page(site, fetcher: Fetcher, feed_items: pd.DataFrame, store) -> tuple[bytes, str]:
    """The front page's bytes, fetched now; if that fails, the copy the partition's poll kept.
    Returns (bytes, where they came from)."""
    res = fetcher.fetch(site.home)
    if res.ok and res.content:
        return res.content, site.home
    kept = feed_items.loc[
        (feed_items["kind"] == "homepage") & feed_items["raw_uri"].notna(), "raw_uri"
    ]
    for uri in kept.unique():
        try:
            return store.get(uri), uri
        except (OSError, ValueError):
            continue
    return b"", f"{site.home} ({res.error or f'HTTP {res.status}'})"


@asset(
    partitions_def=site_day_partitions,
    group_name="drift",
    metadata={"partition_expr": SITE_DAY_EXPR},
    kinds={"python", "duckdb"},
)
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

    with Fetcher(
        newsroom.routing(registry.allowed_origins),
        registry.allowed_origins,
        min_interval={o: site.rate_limit.min_interval_seconds for o in site.allowed_origins},
    ) as fetcher:
        html, page_source = front_page(site, fetcher, feed_items, store)
    fingerprint = template_fingerprint(html) if html else None

    versions = sorted(m.agent_version for m in agents.main_channel())
    baseline_version = ", ".join(versions) or None
    history = store.read_json(history_key(site_key)) or {}
    earlier = from_history(history, day, baseline_version)
    row = assess(
        site_key,
        day,
        fingerprint,
        earlier["previous_fingerprint"],
        feed_volume(feed_items),
        earlier["feed_history"],
        baseline_version,
        baseline_success(run_scores, versions),
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
