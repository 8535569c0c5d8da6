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
import json
import os
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Coroutine
from typing import Any, TypeVar

from playwright.async_api import Browser, Playwright

from newsbench_dagster.core.harness.browser import playwright

T = TypeVar("T")

# Browsers kept between batches: a batch uses at most two sets of options (live and offline),
# and a test worker moves from one newsroom's options to the next.
KEEP_BROWSERS = 2


class BrowserSession:
    """The driver and browsers kept on one event loop (`run_batch`'s)."""

    def __init__(self) -> None:
        self._manager: Any = None
        self._pw: Playwright | None = None
        self._browsers: OrderedDict[str, Browser] = OrderedDict()

    async def playwright(self) -> Playwright:
        if self._pw is not None and not await self._driver_alive():
            await self._stop_driver()
        if self._pw is None:
            self._manager = playwright()
            self._pw = await self._manager.__aenter__()
        return self._pw

    async def _driver_alive(self) -> bool:
        # One round trip to the driver: a driver killed since the last batch fails it.
        try:
            request = await asyncio.wait_for(self._pw.request.new_context(), 10)
            await request.dispose()
            return True
        except Exception:
            return False

    async def browser(self, pw: Playwright, launch: dict) -> Browser:
        """The live browser launched with `launch`, launched now if there is none; the least
        recently used beyond `KEEP_BROWSERS` are closed."""
        key = json.dumps(launch, sort_keys=True, default=str)
        browser = self._browsers.pop(key, None)
        if browser is None or not browser.is_connected():
            browser = await pw.chromium.launch(**launch)
        self._browsers[key] = browser
        while len(self._browsers) > KEEP_BROWSERS:
            _, old = self._browsers.popitem(last=False)
            await _close(old)
        return browser

    def forget(self, browser: Browser) -> None:
        """`browser` failed a run (its caller closes it): never handed out again."""
        for key, kept in list(self._browsers.items()):
            if kept is browser:
                del self._browsers[key]

    async def close(self) -> None:
        while self._browsers:
            await _close(self._browsers.popitem()[1])
        await self._stop_driver()

    async def _stop_driver(self) -> None:
        manager, self._manager, self._pw = self._manager, None, None
        self._browsers.clear()  # they went with their driver
        if manager is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(manager.__aexit__(None, None, None), 10)


async def _close(browser: Browser) -> None:
    with contextlib.suppress(Exception):
        await asyncio.wait_for(browser.close(), 10)


class _MainLoop:
    """The main thread's long-lived loop and its session, for one process (not its forks)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.runner = asyncio.Runner()
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
