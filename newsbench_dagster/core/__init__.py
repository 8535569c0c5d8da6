"""Newsbench's domain logic: usable without Dagster (the CLI calls it directly).

Nothing in this package imports dagster; assets in `newsbench_dagster.assets` are thin wrappers.
"""
