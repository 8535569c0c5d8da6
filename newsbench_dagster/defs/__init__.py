"""Dagster definitions, one folder per stage of the flow: `ingest` (feeds, tasks),
`evaluation` (runs, scores, the nightly and hourly schedules), `drift`, `kpis`, `quality` (the
data-quality gates) and `release` (the candidate path, its gates and sensor). Each folder's
assets form the asset group of its name (`definitions.py` applies it); everything here is thin:
it calls `core` and returns data and metadata."""

from newsbench_dagster.defs import notices

# Before any stage module is imported: the notices are raised while they load.
notices.silence()
