"""`newsbench record` and `newsbench replay run` end to end: today's harbor tasks recorded
from the newsroom the command starts, then replayed offline with the coverage report."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from newsbench_dagster.cli import app
from newsbench_dagster.paths import AGENTS_DIR
from tests.support.net import free_port


def test_record_tasks_then_replay_them_offline_with_a_coverage_report(tmp_path):
    port = free_port()
    warc, tasks = tmp_path / "harbor.warc.gz", tmp_path / "harbor.tasks.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "record",
            "--site",
            "harbor",
            "--intent",
            "find_top_headline",
            "--tasks",
            "1",
            "--out",
            str(warc),
            "--tasks-out",
            str(tasks),
            "--port",
            str(port),
            "--settle-ms",
            "100",
            # The reference agent opens the lead story too: recorded from its live run.
            "--agent",
            str(AGENTS_DIR / "reference.yaml"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "1/1 live runs answered" in result.output
    recorded = [json.loads(line) for line in tasks.read_text().splitlines()]
    assert len(recorded) == 1 and recorded[0]["replay"]["recording"] == str(warc.resolve())

    # No newsroom now: the replay needs none.
    art = tmp_path / "art"
    result = CliRunner().invoke(app, ["replay", "run", str(tasks), "--artifacts", str(art)])
    assert result.exit_code == 0, result.output
    assert "find_top_headline" in result.stdout and "pass" in result.stdout
    assert f"coverage of {warc.resolve()}" in result.stdout
    assert "miss" not in result.stdout.split("coverage of", 1)[1]  # nothing left unanswered
    assert "1/1 scored runs passed" in result.output
    assert list(art.rglob("replay.jsonl"))

    # Replaying the same tasks from a recording without their pages: gaps, named.
    empty = tmp_path / "other.warc.gz"
    result = CliRunner().invoke(
        app, ["record", "http://rhein-rundschau.test/", "--out", str(empty), "--port", str(port)]
    )
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(
        app,
        ["replay", "run", str(tasks), "--recording", str(empty), "--artifacts", str(art)],
    )
    assert result.exit_code == 0, result.output
    assert "replay_gap" in result.stdout
    assert "missing page: http://harbor-herald.test/" in result.stdout


def test_replay_run_refuses_tasks_without_a_recording(tmp_path):
    bad = tmp_path / "t.jsonl"
    bad.write_text(json.dumps({"id": "t-0000000000000000", "entry_url": "http://x.test/"}) + "\n")
    result = CliRunner().invoke(app, ["replay", "run", str(bad)])
    assert result.exit_code == 2
    assert "t-0000000000000000" in result.output and "names no recording" in result.output
    junk = tmp_path / "junk.jsonl"
    junk.write_text("{not json\n")
    result = CliRunner().invoke(app, ["replay", "run", str(junk)])
    assert result.exit_code == 2 and "junk.jsonl:1" in result.output
