"""A materialization in a process of its own, killed at a crash point (`core.crash_points`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from newsbench_dagster.core.crash_points import ENV
from tests.support.paths import REPO


def run_module(module: str, spec: dict, crash_at: str) -> int:
    """`python -m module '<spec json>'` with the crash point `crash_at` set; its exit code
    (-SIGKILL when it died there), its stderr's tail printed when it did not."""
    env = {**os.environ, "PYTHONPATH": str(REPO), ENV: crash_at}
    done = subprocess.run(
        [sys.executable, "-m", module, json.dumps(spec)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode not in (0, -signal.SIGKILL):
        print(done.stderr[-6000:])
    return done.returncode
