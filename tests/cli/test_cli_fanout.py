"""`cli.fanout` without a browser: the runs' config, and a partition that fails before its run
fails alone, named in the step log, while the others are still executed. (Real runs of many
partitions at once: test_cli_parallel_partitions.py, heavy.)"""

from __future__ import annotations

from newsbench_dagster.cli import fanout


def test_run_config_keeps_the_callers_resources_and_sets_the_newsroom_port():
    config = fanout.run_config(8499, {"io_manager": {"database": "/x.duckdb"}})
    assert config["resources"]["io_manager"] == {"config": {"database": "/x.duckdb"}}
    assert config["resources"]["newsroom"] == {"config": {"port": 8499}}
    assert config["loggers"]["console"]["config"]["log_level"] == "WARNING"
    # A newsroom the caller configured keeps its own port.
    mine = fanout.run_config(8499, {"newsroom": {"port": 9001, "seed": 3}})
    assert mine["resources"]["newsroom"] == {"config": {"port": 9001, "seed": 3}}


def test_a_partition_that_fails_before_its_run_fails_alone_and_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    log = tmp_path / "steps.log"
    partitions = [
        fanout.Partition(job="no_such_job", key="2026-11-30", what="ghost 2026-11-30"),
        fanout.Partition(job="also_missing", key="2026-11-30", what="phantom 2026-11-30"),
    ]
    seen: list[tuple[str, bool, str | None]] = []
    with fanout.workers(1) as pool:
        ok = fanout.run_all(
            pool,
            partitions,
            {},
            log,
            lambda p, success, run_id: seen.append((p.what, success, run_id)),
        )
    assert ok is False
    # Both were attempted (as_completed: in any order), each failed without a run.
    assert sorted(seen) == [("ghost 2026-11-30", False, None), ("phantom 2026-11-30", False, None)]
    text = log.read_text()
    for what, job in (("ghost 2026-11-30", "no_such_job"), ("phantom 2026-11-30", "also_missing")):
        assert f"start {what}" in text
        assert f"crash {what}: " in text and job in text, text
