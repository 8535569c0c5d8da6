"""Newsbench's domain logic: usable without Dagster (the CLI calls it directly).

Nothing in this package imports dagster; the definitions in `newsbench_dagster.defs` are thin
wrappers. Its subpackages follow the flow: web, reading, tasks, agents, harness, replay,
scoring, analytics, release.
"""
