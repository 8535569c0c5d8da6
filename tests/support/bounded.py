"""Running a hostile input through the real CLI in a child process whose address space is
capped (RLIMIT_AS), so a regression fails the test with a MemoryError instead of taking the
machine down, and reading that child's own peak RSS (wait4's rusage, not the test process's
children as a whole)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

NEWSBENCH = Path(sys.executable).with_name("newsbench")
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

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            [str(NEWSBENCH), *args], stdout=out, stderr=err, preexec_fn=limit, cwd=cwd
        )
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        return Outcome(
            proc.returncode,
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
            usage.ru_maxrss / 1024,  # KiB on Linux
            seconds,
        )
