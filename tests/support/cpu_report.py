"""`--cpu-report N`: the N test files that used the most CPU, at the end of the run.

The suite is bound by its CPU (four workers on two cores), so a file's wall time says more about
what ran beside it than about the file: `--durations` under load lists tests that only waited.
Each worker measures every test phase's CPU (its own process, every child process it reaped:
Chromium, Playwright's driver, the local model's server, a Dagster subprocess, a CLI command,
and what its processes still alive spent during the phase: the driver and browsers a worker
keeps from one batch to the next, `core/harness/browser_session.py`) and sends it with the
phase's report; the controller adds them up per file. Processes a test leaves to others (a
daemon's grandchildren) are not counted.
"""

from __future__ import annotations

import os
import resource
from collections import defaultdict

import pytest

KEY = "cpu_s"
_mark = [0.0]  # the CPU used by this process and its reaped children when the phase began
_files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])  # cpu, wall, tests


_TICK = os.sysconf("SC_CLK_TCK")


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime + _alive()


def _alive() -> float:
    """The CPU of this process's live descendants, each with the children it reaped: when one
    ends and is reaped, RUSAGE_CHILDREN takes its whole count over, so the sum never jumps."""
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
            for tid in tasks:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    todo += [int(c) for c in f.read().split()]
            if pid != os.getpid():
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        except (OSError, ValueError):  # ended meanwhile, or no /proc here
            continue
    return total / _TICK


def pytest_addoption(parser):
    parser.addoption(
        "--cpu-report",
        type=int,
        default=0,
        metavar="N",
        help="list the N test files that used the most CPU (their processes and the ones they "
        "started), with their wall time: what to shorten first when the suite is slow",
    )


def pytest_runtest_logstart(nodeid, location):
    _mark[0] = _cpu()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if not item.config.getoption("cpu_report"):
        return
    now = _cpu()
    report = outcome.get_result()
    # A new list: the report's is the item's own, shared by its three phases.
    report.user_properties = [*report.user_properties, (KEY, now - _mark[0])]
    _mark[0] = now


def pytest_runtest_logreport(report):
    entry = _files[report.nodeid.split("::")[0]]
    entry[0] += sum(v for k, v in report.user_properties if k == KEY)
    entry[1] += report.duration
    entry[2] += report.when == "call"


def pytest_terminal_summary(terminalreporter, config):
    n = config.getoption("cpu_report")
    if not n or not _files or hasattr(config, "workerinput"):
        return
    total = sum(cpu for cpu, _, _ in _files.values())
    terminalreporter.write_sep("=", f"{n} test files using the most CPU ({total:.0f} s in all)")
    ranked = sorted(_files.items(), key=lambda kv: -kv[1][0])[:n]
    for path, (cpu, wall, tests) in ranked:
        terminalreporter.write_line(f"{cpu:7.1f}s cpu {wall:7.1f}s wall {tests:4d} tests  {path}")
