"""Stage 1: poll each allowlisted site's feeds, sitemap and homepage."""

from datetime import date

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue, asset

from newsbench_dagster.core.analytics.tables import frame
from newsbench_dagster.core.tasks.produce import poll_site
from newsbench_dagster.core.web.network import Fetcher
from newsbench_dagster.partitions import SITE_DAY_EXPR, site_day_partitions
from newsbench_dagster.resources import (
    ArtifactStoreResource,
    NewsroomResource,
    SiteRegistryResource,
)


def partition_of(context: AssetExecutionContext) -> tuple[str, date]:
    keys = context.partition_key.keys_by_dimension
    return keys["site"], date.fromisoformat(keys["day"])


@asset(
    partitions_def=site_day_partitions,
    group_name="ingest",
    metadata={"partition_expr": SITE_DAY_EXPR},
    kinds={"python", "duckdb"},
)
def feed_items(
    context: AssetExecutionContext,
    sites: SiteRegistryResource,
    newsroom: NewsroomResource,
    artifacts: ArtifactStoreResource,
) -> pd.DataFrame:
    """Items read from the site's feeds, news sitemap and homepage; one row per source that
    could not be read, with the reason in `parse_error`."""
    site_key, day = partition_of(context)
    registry = sites.load()
    site = registry.get(site_key)
    store = artifacts.store()
    # What the last poll of each source returned (ETag, Last-Modified, the bytes kept): a
    # source that has not changed since costs a 304 and no body.
    validators_key = f"feeds/{site_key}/validators.json"
    validators = store.read_json(validators_key) or {}
    with Fetcher(
        newsroom.routing(registry.allowed_origins),
        registry.allowed_origins,
        min_interval={o: site.rate_limit.min_interval_seconds for o in site.allowed_origins},
    ) as fetcher:
        rows = poll_site(site, fetcher, store, day, validators)
    store.put_json(validators_key, validators)
    df = frame("feed_items", [{**r.__dict__, "day": day} for r in rows])
    errors = df[df["parse_error"].notna()].drop_duplicates("source_url")
    if len(errors):
        context.log.warning(f"{site_key}: {len(errors)} source(s) unreadable or malformed")
    context.add_output_metadata(
        {
            "items": int(df["item_url"].notna().sum()),
            "sources_not_modified": int(
                df.loc[df["fetch_status"] == "304", "source_url"].nunique()
            ),
            "feed_errors": len(errors),
            "errors": MetadataValue.md(
                "\n".join(
                    f"- `{r.source_url}` ({r.kind}): {r.parse_error}" for r in errors.itertuples()
                )
                or "none"
            ),
        }
    )
    return df
