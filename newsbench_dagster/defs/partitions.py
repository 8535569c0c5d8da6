"""Partitions: `site` is static, built from the reviewed allowlist; `day` is daily and includes
today (live evaluation runs on the current day); `agent_version` is dynamic (one per candidate
version, added by the agent registry sensor). The decorators below carry each kind's
partitions and the column the warehouse finds a partition's rows by, so no asset repeats them."""

from datetime import date
from functools import partial

from dagster import (
    AssetExecutionContext,
    DailyPartitionsDefinition,
    DynamicPartitionsDefinition,
    MultiPartitionsDefinition,
    StaticPartitionsDefinition,
    asset,
    asset_check,
)

from newsbench_dagster.core.web.sites import load_sites
from newsbench_dagster.paths import SITES_FILE

# Reading the reviewed sites file (not the environment) at import: partitions must be static.
SITE_KEYS = load_sites(SITES_FILE).keys

site_partitions = StaticPartitionsDefinition(SITE_KEYS)
day_partitions = DailyPartitionsDefinition(start_date="2026-11-01", end_offset=1, timezone="UTC")
site_day_partitions = MultiPartitionsDefinition({"site": site_partitions, "day": day_partitions})

# How the IO manager finds a partition's rows in each table.
SITE_DAY_EXPR = {"site": "site", "day": "day"}

# Candidate evaluations: one partition per agent version (`name@version+hash`), added by the
# agent registry sensor when a manifest appears or changes.
agent_version_partitions = DynamicPartitionsDefinition(name="agent_version")
CANDIDATE_EXPR = "candidate_version"

# Steps that drive Chromium claim a slot of this Dagster concurrency pool: parallel runs open
# no more browsers than the instance's limit (`dagster_home/dagster.yaml`, `pools`).
BROWSER_POOL = "browser"

_KINDS = {"python", "duckdb"}
site_day_asset = partial(
    asset,
    partitions_def=site_day_partitions,
    metadata={"partition_expr": SITE_DAY_EXPR},
    kinds=_KINDS,
)
day_asset = partial(
    asset, partitions_def=day_partitions, metadata={"partition_expr": "day"}, kinds=_KINDS
)
candidate_asset = partial(
    asset,
    partitions_def=agent_version_partitions,
    metadata={"partition_expr": CANDIDATE_EXPR},
    kinds=_KINDS,
)
# Per-partition checks need the partitions, else they load the whole table.
site_day_check = partial(asset_check, partitions_def=site_day_partitions)
day_check = partial(asset_check, partitions_def=day_partitions)
candidate_check = partial(asset_check, partitions_def=agent_version_partitions)


def partition_of(context: AssetExecutionContext) -> tuple[str, date]:
    """(site, day) of a site-day partition."""
    keys = context.partition_key.keys_by_dimension
    return keys["site"], date.fromisoformat(keys["day"])
