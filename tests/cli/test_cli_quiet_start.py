"""A first run is quiet: no Python warning reaches the terminal.

`newsbench demo` once opened on 14 lines of Dagster preview/beta notices, which a newcomer
reads as "it is broken". Here the demo's path (the definitions loaded, one site's Dagster run
materialized, its KPIs printed, as `demo` does for every site; one intent of its tasks, which
cuts the run's time, not its path) and `--help` run as a user
runs them, in a fresh process with Python's default warning filters, and any warning on
stderr fails the test. The filters themselves are `newsbench_dagster/defs/notices.py`."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from datetime import UTC, datetime

import pytest

from tests.support.net import free_port

pytestmark = pytest.mark.heavy(30)

# The data folders redirected into the test's own, before anything reads their defaults.
PROBE = """\
import sys
from pathlib import Path
import newsbench_dagster.paths as p
root = Path(sys.argv[1])
p.DATA_DIR = root / "data"
p.WAREHOUSE_FILE = p.DATA_DIR / "warehouse.duckdb"
p.ARTIFACTS_DIR = p.DATA_DIR / "artifacts"
p.LOG_DIR = p.DATA_DIR / "logs"
p.DAGSTER_HOME = root / "dagster_home"
if sys.argv[2] == "backfill":  # one intent of the site's tasks: the path, not its volume
    import newsbench_dagster.cli.fanout as fanout
    config = fanout.run_config
    fanout.run_config = lambda port, resources: config(
        port, {**(resources or {}), "tasks": {"intents": ["find_top_headline"]}})
from newsbench_dagster.cli import main
sys.argv = ["newsbench", *sys.argv[2:]]
main()
"""


def _newsbench(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONWARNINGS", "DAGSTER_HOME")}
    env["DAGSTER_HOME"] = str(tmp_path / "dagster_home")
    (tmp_path / "dagster_home").mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "Warning" in line]


def test_one_site_evaluated_from_the_shell_prints_no_warning(tmp_path):
    today = datetime.now(UTC).date().isoformat()
    args = ["backfill", "--site", "harbor", "--start", today, "--end", today]
    done = _newsbench(tmp_path, *args, "--port", str(free_port()), "--workers", "1")
    assert done.returncode == 0, done.stderr
    # The run really happened: its KPI table is printed and the warehouse was written.
    assert "harbor" in done.stdout, done.stdout
    assert (tmp_path / "data" / "warehouse.duckdb").exists()
    assert _warnings(done.stderr) == [], done.stderr


def test_help_prints_no_warning(tmp_path):
    done = _newsbench(tmp_path, "--help")
    assert done.returncode == 0 and "demo" in done.stdout
    assert _warnings(done.stderr) == [], done.stderr


def test_the_filters_are_narrow_our_own_warnings_still_show():
    """A warning our package raises, or another Dagster preview notice, is not swallowed."""
    from dagster import PreviewWarning

    from newsbench_dagster.defs import notices

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        notices.silence()
        # Same category and module as a silenced notice, another message: shown.
        warnings.warn_explicit(
            "Function `something_else` is currently in preview",
            PreviewWarning,
            "definitions.py",
            1,
            module="newsbench_dagster.definitions",
        )
        # Same message as a silenced notice, raised from our own module: shown.
        warnings.warn_explicit(
            "Specifying a partitions_def on an AssetCheckSpec is in preview",
            PreviewWarning,
            "newsbench_dagster/defs/evaluation/checks.py",
            1,
            module="newsbench_dagster.defs.evaluation.checks",
        )
        # A silenced notice, from where Dagster raises it: filtered.
        warnings.warn_explicit(
            "Specifying a partitions_def on an AssetCheckSpec is currently in preview",
            PreviewWarning,
            "asset_check_decorator.py",
            220,
            module="dagster._core.definitions.decorators.asset_check_decorator",
        )
    assert [str(w.message)[:40] for w in seen] == [
        "Function `something_else` is currently i",
        "Specifying a partitions_def on an AssetC",
    ]
