"""Site partitions evaluated at once (`newsbench demo` / `backfill --workers 2`): real Dagster
runs in two worker processes, real Chromium, one real DuckDB file they take turns on.

The agent is examples/cdp_agent.py behind a barrier: with NEWSBENCH_TEST_BARRIER set (the
parallel evaluation only), each site's first run waits until the other site's has started.
So the overlap is proven by the runs themselves, not by wall-clock luck on a loaded machine:
run one after the other, the first would wait out the barrier and leave no `met-` file."""

from __future__ import annotations

import duckdb
import pytest
import yaml
from dagster import DagsterEventType, DagsterInstance

from newsbench_dagster.cli.pipeline import materialize
from tests.support.newsroom_clock import frozen_now
from tests.support.paths import REPO

pytestmark = pytest.mark.heavy(45)

SITES = ["harbor", "lac"]
INSTANCE_YAML = """\
concurrency:
  pools:
    default_limit: 2
telemetry:
  enabled: false
"""
BARRIER_AGENT = """\
import os, pathlib, sys, time, urllib.parse

args = sys.argv[1:]
barrier = os.environ.get("NEWSBENCH_TEST_BARRIER")
if barrier:
    here = pathlib.Path(barrier)
    site = urllib.parse.urlsplit(args[args.index("--url") + 1]).hostname
    (here / f"at-{site}").touch()
    deadline = time.monotonic() + 30
    while len(list(here.glob("at-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    if len(list(here.glob("at-*"))) >= 2:
        (here / f"met-{site}").touch()
os.execv(sys.executable, [sys.executable, EXAMPLE, *args])
"""


def _barrier_agents(tmp_path):
    """A directory holding one main-channel agent: cdp_agent.py behind the barrier."""
    agents = tmp_path / "agents"
    agents.mkdir()
    script = tmp_path / "barrier_agent.py"
    script.write_text(BARRIER_AGENT.replace("EXAMPLE", repr(str(REPO / "examples/cdp_agent.py"))))
    command = ["{python}", str(script), "--cdp-url", "{cdp_url}", "--answer-file"]
    command += ["{answer_file}", "--prompt", "{prompt}", "--url", "{url}"]
    manifest = {
        "name": "barrier-cdp",
        "version": "0.1.0",
        "adapter": "command",
        "channel": "main",
        "params": {"command": command, "timeout_s": 90, "inherit_env": True},
    }
    (agents / "barrier-cdp.yaml").write_text(yaml.safe_dump(manifest))
    return agents


def _query(db, sql: str):
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def _browser_steps(instance: DagsterInstance) -> list[tuple[float, float]]:
    """(start, end) of every agent_runs step the instance recorded."""
    spans = []
    for run in instance.get_runs():
        start = end = None
        for entry in instance.all_logs(run.run_id):
            event = entry.dagster_event
            if event is None or event.step_key != "agent_runs":
                continue
            if event.event_type == DagsterEventType.STEP_START:
                start = entry.timestamp
            elif event.event_type == DagsterEventType.STEP_SUCCESS:
                end = entry.timestamp
        if start is not None and end is not None:
            spans.append((start, end))
    return spans


def test_two_site_partitions_at_once_keep_every_row_once_and_the_serial_kpis(
    newsroom, tmp_path, monkeypatch
):
    with frozen_now(newsroom):
        day = newsroom.clock().date()
        agents = _barrier_agents(tmp_path)
        barrier = tmp_path / "barrier"
        barrier.mkdir()
        results = {}
        for name, workers in (("serial", 1), ("parallel", 2)):
            if workers > 1:
                monkeypatch.setenv("NEWSBENCH_TEST_BARRIER", str(barrier))
            home = tmp_path / f"home-{name}"
            home.mkdir()
            (home / "dagster.yaml").write_text(INSTANCE_YAML)
            monkeypatch.setenv("DAGSTER_HOME", str(home))
            db = tmp_path / f"{name}.duckdb"
            resources = {
                "io_manager": {"database": str(db)},
                "newsroom": {"seed": newsroom.newsroom.seed},
                "artifacts": {"root": str(tmp_path / f"artifacts-{name}")},
                "tasks": {"intents": ["find_top_headline"]},
                "agents": {"directory": str(agents)},
            }
            log = tmp_path / f"{name}.log"
            ok = materialize(
                [day], SITES, newsroom.port, workers=workers, resources=resources, log_path=log
            )
            assert ok, log.read_text()
            with DagsterInstance.from_config(str(home)) as instance:
                results[name] = db, _browser_steps(instance), log.read_text()

    (serial, serial_steps, _), (parallel, steps, log) = results["serial"], results["parallel"]
    # The two sites' agents ran at once: each site's first run met the other's at the barrier
    # (two runs at once, two browser slots); so their agent_runs steps overlapped.
    met = sorted(p.name for p in barrier.glob("met-*"))
    assert len(met) == 2, sorted(p.name for p in barrier.iterdir())
    assert len(steps) == 2 and len(serial_steps) == 2
    (a0, a1), (b0, b1) = sorted(steps)
    assert b0 < a1, f"the parallel runs' agent_runs steps did not overlap: {steps}"
    (s0, s1), (t0, t1) = sorted(serial_steps)
    assert t0 >= s1, "the serial runs overlapped"
    assert log.count(" start ") == 3 and log.count(" ok ") == 3, log

    for db in (serial, parallel):
        for table in ("news_tasks", "agent_runs", "run_scores"):
            key = "task_id" if table == "news_tasks" else "run_id"
            ((n, distinct, sites),) = _query(
                db,
                f"SELECT count(*), count(DISTINCT {key}), count(DISTINCT site) "
                f"FROM newsbench.{table}",
            )
            assert n == distinct > 0 and sites == 2, (db.name, table, n, distinct, sites)

    def tasks(db):
        return _query(db, "SELECT site, task_id FROM newsbench.agent_runs ORDER BY 1, 2")

    def kpis(db):
        return _query(
            db,
            "SELECT site, agent_version, slice_kind, slice_value, n_scored, successes, "
            "success_rate, n_env_failures FROM newsbench.kpi_daily ORDER BY 1, 2, 3, 4",
        )

    assert tasks(parallel) == tasks(serial)
    assert kpis(parallel) == kpis(serial) and len(kpis(serial)) > 2
