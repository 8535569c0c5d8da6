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


def test_a_childs_cpu_is_counted_and_waiting_is_not(tmp_path):
    (tmp_path / "test_burn.py").write_text(BURN)
    (tmp_path / "test_wait.py").write_text(WAIT)
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
    assert set(rows) == {"test_burn.py", "test_wait.py"}, done.stdout
    (burn_cpu, _), (wait_cpu, wait_wall) = rows["test_burn.py"], rows["test_wait.py"]
    assert burn_cpu >= 1.4, done.stdout  # the child's 1.5 s, reaped by the test
    assert wait_cpu < 0.5 and wait_wall >= 1.4, done.stdout
    # Most CPU first.
    assert done.stdout.index("test_burn.py") < done.stdout.index("test_wait.py")
