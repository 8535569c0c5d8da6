"""Poll each allowlisted site's feeds, sitemaps and homepage; make tasks from what was read."""

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue

from newsbench_dagster.core.analytics.tables import frame, records
from newsbench_dagster.core.partition_artifacts import (
    ARTIFACT_ATTEMPT,
    attempt_folder,
    feeds_folder,
)
from newsbench_dagster.core.tasks.contract import task_row
from newsbench_dagster.core.tasks.poll import PollRow, poll_site
from newsbench_dagster.core.tasks.produce import RESERVE, make_tasks
from newsbench_dagster.core.web.network import Fetcher
from newsbench_dagster.defs.partitions import partition_of, site_day_asset
from newsbench_dagster.resources import (
    ArtifactStoreResource,
    NewsroomResource,
    SiteRegistryResource,
    TaskSetResource,
)


@site_day_asset()
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
    routing = newsroom.world(registry.allowed_origins).routing
    # The bytes read go beside those of the previous poll of the partition, which the rows the
    # warehouse holds name; the warehouse swaps them when it commits (`core.partition_artifacts`).
    folder = attempt_folder(context.run_id)
    with Fetcher(routing, registry.allowed_origins, min_interval=site.min_intervals()) as fetcher:
        rows = poll_site(site, fetcher, store, day, validators, folder)
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
            ARTIFACT_ATTEMPT: MetadataValue.json(
                {
                    "store": artifacts.root,
                    "folder": feeds_folder(site_key, day),
                    "attempt": context.run_id,
                }
            ),
            "errors": MetadataValue.md(
                "\n".join(
                    f"- `{r.source_url}` ({r.kind}): {r.parse_error}" for r in errors.itertuples()
                )
                or "none"
            ),
        }
    )
    return df


@site_day_asset()
def news_tasks(
    context: AssetExecutionContext,
    feed_items: pd.DataFrame,
    sites: SiteRegistryResource,
    tasks: TaskSetResource,
) -> pd.DataFrame:
    """Tasks of every intent of the task set (all by default), read-only and state-changing
    (compare_outlets pairs the site with the next one of the allowlist), each valid against
    the task JSON Schema; re-materializing yields the same task ids. The day's tasks (suite
    "live", what `agent_runs` runs) and the release gate's held-out reserve ("held-out")."""
    site_key, day = partition_of(context)
    registry = sites.load()
    rows = [PollRow.from_record(r) for r in records(feed_items, "feed_items")]
    made = make_tasks(
        registry.get(site_key),
        day,
        rows,
        articles_per_site=tasks.articles_per_site,
        intents=tuple(tasks.intents),
        partner=registry.partner_of(site_key),
        reserve=tasks.reserve,
    )
    df = frame("news_tasks", [task_row(t) for t in made])
    daily = df[df["suite"] != RESERVE]
    context.add_output_metadata(
        {
            "tasks": len(daily),
            "by_intent": daily["intent"].value_counts().to_dict() if len(daily) else {},
            # What the release gate can draw held-out tasks from, this site and day.
            "pool": len(df),
            "reserve": len(df) - len(daily),
        }
    )
    return df
