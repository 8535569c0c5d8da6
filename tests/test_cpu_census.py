"""The CPU census counts what the per-file CPU report cannot see: a process orphaned by the
command (its parent gone before it), which no one in the command's tree ever reaps."""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from tests.support.cpu_census import RUNNING, kind

ROOT = Path(__file__).resolve().parents[1]


def _accounting_allowed() -> bool:
    if os.environ.get(RUNNING):  # the suite itself is being censused: do not stop that one
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    with tempfile.NamedTemporaryFile() as f:
        if libc.acct(f.name.encode()) != 0:
            return False
        libc.acct(None)
        return True


BURN = "import time\nend = time.process_time() + 1.0\nwhile time.process_time() < end: pass\n"


def test_an_orphan_and_a_child_are_both_counted_by_kind(tmp_path):
    if not _accounting_allowed():
        pytest.skip("process accounting needs root or CAP_SYS_PACCT here, and no census around")
    (tmp_path / "burn.py").write_text(BURN)
    # The command: a child it waits for, and a grandchild orphaned at once (its parent exits),
    # each burning one second of CPU; the command itself burns almost none.
    (tmp_path / "command.py").write_text(
        textwrap.dedent(f"""
        import os, subprocess, sys
        burn = {str(tmp_path / "burn.py")!r}
        subprocess.run([sys.executable, burn], check=True)
        if os.fork() == 0:
            subprocess.Popen([sys.executable, burn, "orphan"])
            os._exit(0)
        os.wait()
        """)
    )
    # Run as a contributor runs it: the census becomes the subreaper of its own process (never
    # this test worker's, whose other children it would reap).
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.cpu_census", "--", sys.executable, "command.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = {
        m.group(3): (float(m.group(1)), int(m.group(2)))
        for m in re.finditer(r"^ +([\d.]+) +[\d.]+% +(\d+)  (.+)$", done.stdout, re.M)
    }
    cpu, procs = rows["python burn.py"]
    # The orphan is counted (without the subreaper: one process). The kernel's accounting
    # samples CPU time at its ticks, which on a loaded machine counted 1.4 s for these 2 s:
    # the bounds allow for that (and fail at none), the count of processes is exact.
    assert procs == 2 and 0.5 <= cpu <= 3.0, done.stdout
    assert rows["python command.py"][0] < 0.5, done.stdout
    # The census's own process is not in it.
    assert not any(name.startswith("python -m tests") for name in rows), done.stdout


def test_kinds_are_named_from_the_command_line():
    driver = ["/x/playwright/driver/node", "/x/package/cli.js", "run-driver"]
    assert kind(driver, "node-MainThread") == "node (Playwright driver)"
    assert kind(["/usr/bin/chromium-headless-shell", "--type=renderer"], "x") == "chromium"
    zygote = ["/proc/self/exe", "--type=zygote", "--no-sandbox"]
    assert kind(zygote, "chromium-headle") == "chromium"
    worker = ["/v/bin/python", "-u", "-c", "import sys;exec(eval(sys.stdin.readline()))"]
    assert kind(worker, "python") == "python: pytest worker"
    spawned = ["/v/bin/python", "-X", "utf8", "-c", "from multiprocessing.spawn import x; x()"]
    assert kind(spawned, "python") == "python: multiprocessing child"
    assert kind(["/v/bin/python", "-m", "dagster", "dev"], "python") == "python -m dagster"
    assert kind(["/v/bin/python", "/v/bin/newsbench", "gate"], "python") == "python newsbench"
    assert kind(None, "ThreadPoolForeg") == "unsampled: ThreadPoolForeg"
    assert os.path.basename(sys.executable).startswith("python")
