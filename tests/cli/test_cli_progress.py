"""The long commands' progress where people read it: on a narrow terminal the bar's
description wraps instead of being cut; in a log (stderr not a terminal: a pipe, a file, CI)
it is plain lines, never cut; and the demo's steps reach data/logs/materialize.log and stderr
one line each, with a real Dagster run of one site against a real newsroom."""

from __future__ import annotations

import inspect
import io
import os
import re

import pytest
from dagster import DagsterInstance
from rich.console import Console

from newsbench_dagster.cli.common import LineProgress, progress
from newsbench_dagster.cli.pipeline import materialize
from newsbench_dagster.paths import LOG_DIR
from newsbench_dagster.run_health import worker_of
from tests.support.newsroom_clock import frozen_now

pytestmark = pytest.mark.heavy(15)  # one Dagster run of one site

# What the gate's bar said: two full versions, cut to "selector-baseline@0.1.0+4666…" at 80
# columns before the bar, the count and the time.
LONG = "selector-baseline@0.1.0+466611b7 vs reference@0.1.0+004b8b70 runs"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _run(console: Console, steps: int = 4) -> str:
    with progress(console) as bar:
        job = bar.add_task(LONG, total=steps)
        for _ in range(steps):
            bar.advance(job)
    return console.file.getvalue()


def test_on_a_narrow_terminal_the_description_wraps_instead_of_being_cut():
    out = ANSI.sub("", _run(Console(file=io.StringIO(), force_terminal=True, width=50)))
    lines = out.rsplit("\r", 1)[-1].splitlines()  # the final frame
    assert "…" not in "".join(lines) and "4/4" in lines[0]
    width = lines[0].index(" ━")  # the description's column, wrapped over the lines
    wrapped = " ".join(line[:width].strip() for line in lines if line[:width].strip())
    assert wrapped.replace(" ", "") == LONG.replace(" ", ""), lines


def test_in_a_log_the_progress_is_plain_lines_never_cut():
    console = Console(file=io.StringIO(), width=40)  # not a terminal
    assert isinstance(progress(console), LineProgress)
    lines = _run(console).splitlines()
    assert lines[0].startswith(f"{LONG}: 1/4 (") and lines[-1].startswith(f"{LONG}: 4/4 (")
    assert all(line.startswith(LONG) for line in lines)  # one line each, not wrapped at 40


def test_the_demos_steps_go_to_the_step_log_and_to_stderr_as_lines(
    newsroom, tmp_path, monkeypatch, capsys
):
    """`newsbench demo --no-ui` in a log showed nothing per step (rich's bar draws only on a
    terminal): each step is a line in data/logs/materialize.log (the demo's `materialize`
    writes there by default) and, stderr not being a terminal, a line on stderr."""
    assert inspect.signature(materialize).parameters["log_path"].default == (
        LOG_DIR / "materialize.log"
    )
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with frozen_now(newsroom):
        day = newsroom.clock().date()
        resources = {
            "io_manager": {"database": str(tmp_path / "wh.duckdb")},
            "newsroom": {"seed": newsroom.newsroom.seed},
            "artifacts": {"root": str(tmp_path / "artifacts")},
            "tasks": {"intents": ["find_top_headline"]},
        }
        log = tmp_path / "logs" / "materialize.log"
        ok = materialize(
            [day], ["harbor"], newsroom.port, workers=2, resources=resources, log_path=log
        )
    assert ok, log.read_text()
    # One site: its runs went in this process, no worker spawned to import everything and idle.
    with DagsterInstance.get() as instance:
        runs = instance.get_runs()
        assert len(runs) == 2 and {worker_of(instance, r.run_id)[0] for r in runs} == {os.getpid()}
    steps = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    assert [s.split(" ", 1)[0] for s in steps] == ["start", "ok", "start", "ok", "all"], steps
    assert f"{day} harbor: feed → tasks → runs → scores in " in steps[1]
    assert f"{day}: KPI rollup in " in steps[3]
    stderr = capsys.readouterr().err
    assert f"progress is logged to {log}" in stderr
    assert f"{day} harbor: feed → tasks → runs → scores: ok (run " in stderr
    assert f"{day}: KPI rollup: ok (run " in stderr
    assert re.search(r": 2/2 \(\d+s\)$", stderr, re.M), stderr
