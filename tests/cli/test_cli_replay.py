"""`newsbench record` and `newsbench replay run` end to end: today's harbor tasks recorded
from the newsroom the command starts, then replayed offline with the coverage report."""

from __future__ import annotations

import gzip
import json

import pytest
from typer.testing import CliRunner

from newsbench_dagster.cli import app
from newsbench_dagster.paths import AGENTS_DIR, PROJECT_ROOT, SITES_FILE, SUITES_DIR
from tests.support.net import free_port

# Records pages in Chromium and replays them, five times: about 45 s on two busy cores.
pytestmark = pytest.mark.heavy(45)


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


SUITE = SUITES_DIR / "regression" / "harbor-replayed.yaml"
RECORDING = PROJECT_ROOT / "recordings" / "harbor-2026-12-01.warc.gz"


def test_replay_run_runs_the_replay_backed_suite_file(tmp_path):
    """The suite in suites/ is YAML: `replay run` rejected it as "not JSON". It is read as the
    suites are (ids and defaults filled) and runs offline, no newsroom."""
    from newsbench_dagster.core.tasks.suites import load_suites
    from newsbench_dagster.core.web.sites import load_sites

    sites = load_sites(SITES_FILE)
    ids = [
        t.id
        for t in load_suites(SUITES_DIR, sites.allowed_origins, sites.keys).tasks
        if t.file.endswith("harbor-replayed.yaml")
    ]
    result = CliRunner().invoke(app, ["replay", "run", str(SUITE), "--artifacts", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert len(ids) == 4 and all(i in result.stdout for i in ids), result.stdout
    assert f"coverage of {RECORDING}" in result.stdout
    assert "4/4 scored runs passed" in result.output


def _refused(path) -> str:
    """`replay run` on a file that is not tasks: exit 2, one line naming the file, no
    traceback."""
    result = CliRunner().invoke(app, ["replay", "run", str(path)])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # not a crash
    assert "Traceback" not in result.output
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {path}")
    return line


def test_replay_run_names_a_file_that_is_not_tasks_in_one_line(tmp_path):
    # A recording given as the tasks printed a raw UnicodeDecodeError traceback.
    assert "a WARC recording (gzipped), not tasks" in _refused(RECORDING)
    plain = tmp_path / "plain.warc"
    plain.write_bytes(gzip.decompress(RECORDING.read_bytes())[:5000])
    assert "a WARC recording, not tasks" in _refused(plain)
    png = tmp_path / "tasks.json"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert "binary data" in _refused(png)
    latin = tmp_path / "tasks.jsonl"
    latin.write_bytes('{"id": "café"}'.encode("latin-1"))
    assert "not UTF-8 text" in _refused(latin)
    broken = tmp_path / "tasks.yaml"
    broken.write_text("- site: harbor\n  intent: [unclosed\n")
    assert f"{broken}:3: not valid YAML" in _refused(broken)
    # A suite file with a problem: named as `tasks validate` names it.
    suite = tmp_path / "regression" / "bad.yaml"
    suite.parent.mkdir()
    suite.write_text(SUITE.read_text().replace("intent: locate_factbox", "intent: fly_a_kite"))
    at = SUITE.read_text().splitlines().index("  intent: locate_factbox") + 1
    line = _refused(suite)
    assert f"bad.yaml:{at}: t-" in line and "$.intent: unknown intent 'fly_a_kite'" in line
    # Tasks without ids outside a suite directory: said, not crashed on.
    loose = tmp_path / "loose.yaml"
    loose.write_text(SUITE.read_text())
    assert "task 0 has no id" in _refused(loose)


def test_record_at_an_instant_then_replay_the_selector_baseline_as_the_readme_does(tmp_path):
    """The README's walkthrough: harbor recorded with --at before its redesign (2026-11-16),
    then the selector baseline (learned on that template) replayed offline passes there."""
    warc, tasks = tmp_path / "harbor.warc.gz", tmp_path / "harbor.tasks.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "record", "--site", "harbor", "--intent", "find_top_headline",
            "--intent", "extract_article_metadata", "--tasks", "2",
            "--agent", str(AGENTS_DIR / "reference.yaml"), "--at", "2026-11-15T15:00:00Z",
            "--out", str(warc), "--tasks-out", str(tasks), "--port", str(free_port()),
            "--settle-ms", "100",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "clock frozen at 2026-11-15T15:00:00+00:00" in result.output
    recorded = [json.loads(line) for line in tasks.read_text().splitlines()]
    assert len(recorded) == 2 and {t["day"] for t in recorded} == {"2026-11-15"}
    result = CliRunner().invoke(
        app,
        ["replay", "run", str(tasks), "--agent", str(AGENTS_DIR / "selector-baseline.yaml"),
         "--artifacts", str(tmp_path / "art")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "2/2 scored runs passed" in result.output
