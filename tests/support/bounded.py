"""Running a hostile input through the real CLI in a child process whose address space is
capped (RLIMIT_AS), so a regression fails the test with a MemoryError instead of taking the
machine down, and reading that child's own peak RSS (`peak_rss.py`: wait4's rusage
of a child forked from a small launcher, not from the test process)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

NEWSBENCH = Path(sys.executable).with_name("newsbench")
PEAK_RSS = Path(__file__).with_name("peak_rss.py")
GB = 1024**3


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    peak_mb: float
    seconds: float

    @property
    def message(self) -> str:
        """The error line the user sees (the first line of stderr that says error)."""
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        said = [line for line in lines if line.startswith("error:")]
        return (said or lines or [""])[0]


def run_capped(
    args: list[str], *, cap_bytes: int = 3 * GB, timeout: float = 120.0, cwd: str | None = None
) -> Outcome:
    """`newsbench ARGS` in a child limited to `cap_bytes` of address space."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile("r") as peak,
    ):
        started = time.perf_counter()
        # Through the small launcher: forked from this (large) test process, the child's
        # peak RSS would start at ours.
        launcher = [sys.executable, str(PEAK_RSS), peak.name, str(cap_bytes), "--"]
        proc = subprocess.Popen(
            [*launcher, str(NEWSBENCH), *args],
            stdout=out,
            stderr=err,
            cwd=cwd,
            start_new_session=True,
        )
        timer = threading.Timer(timeout, os.killpg, (proc.pid, 9))
        timer.start()
        try:
            proc.wait()
        finally:
            timer.cancel()
        seconds = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        kib = peak.read().strip()
        return Outcome(
            proc.returncode,
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
            int(kib or 0) / 1024,  # KiB on Linux; 0 when the launcher was killed
            seconds,
        )
