"""Partitions: `site` is static, built from the reviewed allowlist; `day` is daily and includes
today (live evaluation runs on the current day)."""

from dagster import (
    DailyPartitionsDefinition,
    DynamicPartitionsDefinition,
    MultiPartitionsDefinition,
    StaticPartitionsDefinition,
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
