"""The suite's CPU report (`--cpu-report N`, tests/support/cpu_report.py) counts what a file's
tests burn in the child processes they start, and not the time they only wait."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.support.paths import REPO

BURN = """
import subprocess, sys

def test_burns_in_a_child():
    busy = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 1.5: pass"
    subprocess.run([sys.executable, "-c", busy], check=True)
"""
WAIT = """
import time

def test_only_waits():
    time.sleep(1.5)
"""


def _report(tmp_path, files: dict[str, str]) -> tuple[dict[str, tuple[float, float]], str]:
    """Runs pytest with the CPU report on `files` (name -> source), in order: each file's
    (cpu, wall), and the output."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.support.cpu_report", "--cpu-report=5"]
        + ["-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly", "-q", str(tmp_path)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {
        m["file"]: (float(m["cpu"]), float(m["wall"]))
        for m in re.finditer(
            r"^ *(?P<cpu>[\d.]+)s cpu +(?P<wall>[\d.]+)s wall +1 tests +(?P<file>\S+)$",
            done.stdout,
            re.M,
        )
    }
    return rows, done.stdout


def test_a_childs_cpu_is_counted_and_waiting_is_not(tmp_path):
    rows, out = _report(tmp_path, {"test_burn.py": BURN, "test_wait.py": WAIT})
    assert set(rows) == {"test_burn.py", "test_wait.py"}, out
    (burn_cpu, _), (wait_cpu, wait_wall) = rows["test_burn.py"], rows["test_wait.py"]
    assert burn_cpu >= 1.4, out  # the child's 1.5 s, reaped by the test
    assert wait_cpu < 0.5 and wait_wall >= 1.4, out
    # Most CPU first.
    assert out.index("test_burn.py") < out.index("test_wait.py")


START = """
import subprocess, sys

def test_starts_a_child_left_running():
    busy = (
        "import pathlib, time\\nt = time.process_time()\\n"
        "while time.process_time() - t < 1.5: pass\\n"
        "pathlib.Path('burned').touch()\\ntime.sleep(60)"
    )
    sys.burner = subprocess.Popen([sys.executable, "-c", busy])
"""
BURNS_MEANWHILE = """
import pathlib, time

def test_waits_while_the_child_burns():
    deadline = time.monotonic() + 60
    while not pathlib.Path("burned").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
"""
REAPS = """
import sys

def test_reaps_the_child():
    sys.burner.kill()
    sys.burner.wait()
"""


def test_a_live_childs_cpu_counts_in_the_file_it_was_spent_in(tmp_path):
    # A child kept alive across files (as a worker keeps its Playwright driver and browsers):
    # its CPU is the file's during which it burned it, not the one that reaped it at last.
    files = {"test_a_start.py": START, "test_b_meanwhile.py": BURNS_MEANWHILE}
    rows, out = _report(tmp_path, {**files, "test_c_reap.py": REAPS})
    cpu = {name: cpu for name, (cpu, _) in rows.items()}
    assert cpu["test_b_meanwhile.py"] >= 1.2, out
    assert cpu["test_c_reap.py"] < 0.5 and cpu["test_a_start.py"] < 0.5, out
