"""Whether a process on this machine is still the one that started a piece of work.

A run's worker records its pid when it starts; if that process is gone (killed, the machine's
OOM killer, a closed terminal), a zombie nobody reaped, or a newer process that reuses the pid,
the work is dead and whoever waits for it should stop waiting (`run_health`).
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

PROC = Path("/proc")


@cache  # the boot time does not change while this process lives
def _boot_time() -> float | None:
    try:
        for line in (PROC / "stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except OSError:
        pass
    return None


def _proc_stat(pid: int) -> tuple[str, float] | None:
    """(state letter, start time as a Unix timestamp) of `pid` from /proc; None when /proc
    does not know it."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may contain spaces: split after it.
    fields = text[text.rindex(")") + 2 :].split()
    state, start_ticks = fields[0], int(fields[19])
    boot = _boot_time()
    started = boot + start_ticks / os.sysconf("SC_CLK_TCK") if boot is not None else 0.0
    return state, started


def process_alive(pid: int, started_by: float | None = None) -> bool:
    """Whether process `pid` is alive (not a zombie) and, given `started_by` (a Unix
    timestamp the process had already started by, such as when it logged its pid), is that
    same process rather than a later one that reuses the pid."""
    if pid <= 0:
        return False
    if PROC.is_dir():
        stat = _proc_stat(pid)
        if stat is None:
            return False
        state, started = stat
        if state in ("Z", "X"):  # killed, not yet reaped by its parent: gone all the same
            return False
        # Clock ticks are 10 ms; a second of slack for clocks and rounding.
        return started_by is None or started <= started_by + 1.0
    try:  # no /proc (macOS): the pid's existence is all there is to know
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process has the pid
    return True
