"""The candidate job: one agent version evaluated against its baseline and gated (requested by
the agent registry sensor, or launched from the UI for a partition)."""

from dagster import AssetSelection, define_asset_job

from newsbench_dagster.defs.partitions import agent_version_partitions

candidate_job = define_asset_job(
    "candidate_job",
    selection=AssetSelection.assets("candidate_runs", "candidate_scores", "release_decision"),
    partitions_def=agent_version_partitions,
    description="Evaluate one agent version against the baseline and gate it.",
)
