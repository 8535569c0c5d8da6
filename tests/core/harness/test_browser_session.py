"""A process's batches share one Playwright driver and its browsers (core/harness/
browser_session.py): real Chromium, real drivers, real processes counted with psutil."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import threading
import time

import psutil
import pytest

from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.browser import KEEP_BROWSERS, BrowserOptions
from newsbench_dagster.core.harness.browser_session import batch_playwright, run_batch
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.scoring.score import score_run

REFERENCE = AgentManifest(name="reference", version="0.1.0", adapter="reference")


def drivers() -> set[int]:
    """This process's Playwright drivers (Node.js `run-driver`)."""
    return {p.pid for p in _children() if "run-driver" in " ".join(p.info["cmdline"] or ())}


def browsers() -> set[int]:
    """This process's Chromium browser processes (not their renderers or helpers)."""
    return {
        p.pid
        for p in _children()
        if (cmd := p.info["cmdline"] or ())
        and "chrom" in os.path.basename(cmd[0])
        and not any(a.startswith("--type=") for a in cmd)
    }


def _children():
    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            p.info = {"cmdline": p.cmdline()}
        except psutil.Error:
            continue
        if p.status() != psutil.STATUS_ZOMBIE:
            found.append(p)
    return found


@pytest.fixture
def one_task(harbor_today, browser_options, tmp_path):
    """A batch of the reference agent on harbor's metadata task, and its check."""
    day, tasks, robots = harbor_today
    task = copy.deepcopy(next(t for t in tasks if t["intent"] == "extract_article_metadata"))

    def batch() -> dict:
        runner = Runner(
            [build_agent(REFERENCE)],
            options=browser_options,
            robots=robots,
            store=LocalArtifactStore(tmp_path / "artifacts"),
            settings=RunSettings(artifacts=()),
        )
        [row] = run_tasks([task], day, runner)
        assert score_run(row, task)["success"], row["error"]
        return row

    return batch


def test_batches_share_one_driver_and_one_browser_and_a_dead_driver_is_replaced(one_task):
    one_task()
    first = (drivers(), browsers())
    assert len(first[0]) == 1 and len(first[1]) >= 1, first
    one_task()
    assert (drivers(), browsers()) == first  # nothing started for the second batch

    # A driver killed between batches (its browsers go with it): the next batch starts anew.
    for pid in first[0]:
        psutil.Process(pid).kill()
    psutil.wait_procs([psutil.Process(p) for p in first[0] if psutil.pid_exists(p)], timeout=10)
    one_task()
    now = drivers()
    assert len(now) == 1 and now.isdisjoint(first[0]), (now, first)

    # A browser killed between batches is relaunched by the next one.
    killed = browsers()
    for pid in killed:
        psutil.Process(pid).kill()
    one_task()
    assert drivers() == now and browsers() and browsers().isdisjoint(killed)


def test_a_batch_on_another_thread_starts_and_stops_its_own_driver(one_task):
    one_task()  # the main thread's session is up
    before, rows = drivers(), []
    thread = threading.Thread(target=lambda: rows.append(one_task()))
    thread.start()
    thread.join(120)
    assert len(rows) == 1, "the thread's batch failed"  # its error is in the log above
    assert drivers() == before, "the thread's driver outlived its batch"


def test_the_session_keeps_the_most_recent_browsers_only():
    async def launch_three():
        async with batch_playwright() as (pw, session):
            assert session is not None
            base = BrowserOptions().launch_kwargs()
            launched = []
            for lang in ("de", "fr", "it"):
                kwargs = {**base, "args": [*base["args"], f"--lang={lang}"]}
                launched.append(await session.browser(pw, kwargs))
            return [b.is_connected() for b in launched]

    connected = run_batch(launch_three())
    assert connected == [False] * (3 - KEEP_BROWSERS) + [True] * KEEP_BROWSERS


PROBE = """
import json, os, sys, psutil
from newsbench_dagster.core.harness.browser import KEEP_BROWSERS, BrowserOptions
from newsbench_dagster.core.harness.browser_session import batch_playwright, run_batch

async def up():
    async with batch_playwright() as (pw, session):
        await session.browser(pw, BrowserOptions().launch_kwargs())

run_batch(up())
pids = [p.pid for p in psutil.Process().children(recursive=True)]
print(json.dumps(pids), flush=True)
if sys.argv[1] == "killed":
    os._exit(0)  # no atexit: the driver must still end with its pipe
"""


@pytest.mark.parametrize("end", ["exit", "killed"])
def test_nothing_is_left_running_after_the_process_ends(end):
    done = subprocess.run(
        [sys.executable, "-c", PROBE, end], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    pids = json.loads(done.stdout.splitlines()[-1])
    assert len(pids) >= 2, pids  # the driver and its browser at least
    deadline = time.monotonic() + 15
    while (alive := [p for p in pids if _running(p)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive, [psutil.Process(p).cmdline() for p in alive if _running(p)]


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
