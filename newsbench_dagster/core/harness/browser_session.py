"""One Playwright driver, and its browsers, for every batch a process runs on its main thread.

A batch used to start its own Playwright driver (a Node.js process: ~0.44 s of CPU here) and
launch its own Chromium (~0.4 s), so a process running many batches (a test worker, `newsbench
gate` at each look, Dagster's in-process executor) paid both every time. `run_batch` runs a
batch on the main thread's one long-lived event loop instead, where the driver and the most
recently used browsers (one per set of launch options) stay up from one batch to the next.
Elsewhere (another thread, a loop of the caller's) a batch starts and stops its own, as before.

Runs still never share a context: each opens its own and closes it. A browser that died is
relaunched (`BrowserPool`), a driver that died is restarted, a forked child starts afresh, and
at exit the browsers are closed and the driver stopped; a process killed outright leaves
nothing either, since the driver ends its browsers when its pipe closes.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import os
import threading
from asyncio import Runner as EventLoopRunner
from collections.abc import AsyncIterator, Coroutine
from typing import Any, TypeVar

from playwright.async_api import Playwright

from newsbench_dagster.core.harness.browser import BrowserSession, playwright

T = TypeVar("T")


class _MainLoop:
    """The main thread's long-lived loop and its session, for one process (not its forks)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.runner = EventLoopRunner()
        self.session = BrowserSession()
        atexit.register(self.close)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        # Each batch in a copy of the caller's context variables, as asyncio.run would.
        return self.runner.run(coro, context=contextvars.copy_context())

    def close(self) -> None:
        if os.getpid() != self.pid:
            return
        with contextlib.suppress(Exception):
            self.runner.run(self.session.close())
        with contextlib.suppress(Exception):
            self.runner.close()


_main: _MainLoop | None = None


def run_batch(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coro)`, on the main thread's long-lived loop whose browser session the
    batch's `batch_playwright` shares; on any other thread, `asyncio.run` itself."""
    global _main
    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(coro)
    if _main is None or _main.pid != os.getpid():
        _main = _MainLoop()
    return _main.run(coro)


@contextlib.asynccontextmanager
async def batch_playwright() -> AsyncIterator[tuple[Playwright, BrowserSession | None]]:
    """The batch's Playwright, and the session keeping its browsers when it runs on
    `run_batch`'s loop; else a driver of the batch's own (and no session)."""
    main, shared = _main, None
    if main is not None and main.pid == os.getpid():
        with contextlib.suppress(RuntimeError):  # no loop of its own yet
            if main.runner.get_loop() is asyncio.get_running_loop():
                shared = main.session
    if shared is not None:
        yield await shared.playwright(), shared
        return
    async with playwright() as pw:
        yield pw, None
