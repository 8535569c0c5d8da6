"""Bad input to the commands is one clear line and exit 1 or 2, never a traceback: a missing
manifest path (every command that takes one), a day that is not a day or is in the future
(refused before anything runs), and a broken default sites.yaml (named by file and line,
and only by the commands that read it: `--help` still works)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from newsbench_dagster.cli import app
from newsbench_dagster.paths import PROJECT_ROOT

SUITE = str(PROJECT_ROOT / "suites" / "regression" / "harbor-replayed.yaml")


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["agents", "try", "{m}"], 1),
        (["gate", "--candidate", "{m}"], 2),
        (["gate", "--candidate", "reference", "--baseline", "{m}"], 2),
        (["replay", "run", "--agent", "{m}", SUITE], 2),
        (["record", "--agent", "{m}", "http://harbor-herald.test/"], 2),
    ],
)
def test_a_missing_manifest_path_is_named(tmp_path, args, code):
    manifest = tmp_path / "nope.yaml"
    result = CliRunner().invoke(app, [a.replace("{m}", str(manifest)) for a in args])
    assert result.exit_code == code, result.output
    assert result.stderr.strip() == f"error: {manifest}: no such file"


def test_backfill_refuses_a_future_day_and_a_day_that_is_not_one_up_front():
    today = datetime.now(UTC).date()
    later = today + timedelta(days=5)
    args = ["backfill", "--site", "harbor", "--start", str(today), "--end", str(later)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: --end {later} is in the future (today is {today}, UTC)"
    args = ["backfill", "--site", "harbor", "--start", "2026-13-45", "--end", str(today)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: --start '2026-13-45' is not a day (YYYY-MM-DD): month must be in 1..12"
    )
    result = CliRunner().invoke(app, ["demo", "--no-ui", "--day", str(later)])
    assert result.exit_code == 2 and f"--day {later} is in the future" in result.stderr


def _with_sites(path, *args: str) -> subprocess.CompletedProcess:
    """`newsbench ARGS` with the default sites.yaml pointed at `path`."""
    probe = (
        "import sys\nfrom pathlib import Path\nimport newsbench_dagster.paths as p\n"
        f"p.SITES_FILE = Path({str(path)!r})\n"
        "from newsbench_dagster.cli import main\n"
        f"sys.argv = ['newsbench', *{list(args)!r}]\nmain()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )


def test_a_broken_default_sites_file_is_named_by_line_and_help_still_works(tmp_path):
    sites = tmp_path / "sites.yaml"
    sites.write_text("sites:\n  - key: harbor\n    name: [unclosed\n")
    expected = f"error: {sites}:4: not valid YAML: expected ',' or ']', but got '<stream end>'"
    for args in (
        ["backfill", "--site", "harbor", "--start", "2026-11-20", "--end", "2026-11-20"],
        ["demo", "--no-ui"],
        ["tasks", "validate"],
    ):
        done = _with_sites(sites, *args)
        assert done.returncode == 1, done.stderr
        assert done.stderr.strip() == expected, done.stderr
    done = _with_sites(sites, "--help")
    assert done.returncode == 0 and "backfill" in done.stdout


def test_a_task_file_nested_too_deep_or_an_alias_bomb_is_one_line(tmp_path):
    deep = tmp_path / "tasks.json"
    deep.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    lines = tmp_path / "tasks.jsonl"
    lines.write_text('{"id": "a"}\n' + "[" * 100 + "]" * 100 + "\n")
    bomb = tmp_path / "tasks.yaml"
    levels = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    bomb.write_text("\n".join(levels) + "\n")
    for path, message in (
        (deep, f"{deep}: JSON nested deeper than 64 levels"),
        (lines, f"{lines}:2: JSON nested deeper than 64 levels"),
        (bomb, f"{bomb}:6: YAML aliases expand to more than 200000 nodes (an alias bomb?)"),
    ):
        result = CliRunner().invoke(app, ["replay", "run", str(path)])
        assert result.exit_code == 2, result.output
        assert result.stderr.strip() == f"error: {message}"
