"""Whether a run's process is still the one that logged its pid (`core.processes`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from newsbench_dagster.core.processes import process_alive


def test_a_live_process_a_killed_one_unreaped_and_a_reused_pid():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert process_alive(child.pid)
        assert process_alive(child.pid, started_by=time.time())
        assert process_alive(os.getpid())
        # Logged before the process existed: the pid belongs to a newer process.
        assert not process_alive(child.pid, started_by=time.time() - 3600)
        os.kill(child.pid, signal.SIGKILL)
        time.sleep(0.2)  # killed, not yet waited for: a zombie, dead all the same
        assert not process_alive(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not process_alive(child.pid)
    assert not process_alive(0) and not process_alive(-1)
