"""The long commands' progress file: one line per step, its outcome and time, kept on a crash."""

from __future__ import annotations

import pytest

from newsbench_dagster.cli.common import StepLog


def test_each_step_is_logged_with_its_outcome_and_a_crash_is_kept(tmp_path):
    log = StepLog(tmp_path / "logs" / "materialize.log")
    with log.step("2026-12-03 harbor: feed → tasks → runs → scores") as done:
        done(True, "run-1")
    with log.step("2026-12-03 quill: feed → tasks → runs → scores") as done:
        done(False, "run-2")
    with pytest.raises(RuntimeError), log.step("2026-12-03: KPI rollup"):
        raise RuntimeError("disk full")
    lines = log.path.read_text(encoding="utf-8").splitlines()
    assert [line.split(" ", 2)[1] for line in lines] == [
        "start",
        "ok",
        "start",
        "FAILED",
        "start",
        "crash",
    ]
    assert "harbor" in lines[1] and "(run run-1)" in lines[1] and "s (run" in lines[1]
    assert "run-2" in lines[3] and "disk full" in lines[5]
