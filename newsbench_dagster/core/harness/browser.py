"""Launching Chromium for runs: the system Chromium (its headless shell for headless runs) when
present, else Playwright's own; `BrowserPool`, the browsers a batch's runs share (a live one,
an offline one for replays) and the Chromium of its own a CDP agent gets; `BrowserSession`, the
driver and browsers a process keeps between batches (`browser_session`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import tempfile
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path

from playwright.async_api import (
    Browser,
    BrowserContext,
    Playwright,
    PlaywrightContextManager,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError

from newsbench_dagster.core.harness.cdp_guard import CdpGuard
from newsbench_dagster.core.web.network import Routing, free_port

# Flags measured to keep headless Chromium quiet and self-contained on a closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--no-first-run",
]

SYSTEM_CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
# Headless runs prefer Chromium's headless shell, as Playwright does with its own browsers:
# the same engine without the desktop browser around it, measured here at about half the CPU
# and wall time per run of the full browser's headless mode.
SYSTEM_HEADLESS_SHELL = ("/usr/bin/chromium-headless-shell",)


def keep_node_compiled() -> None:
    """Let Playwright's Node.js drivers started from now on keep their compiled code.

    Each process starts a driver (`browser_session`; each batch off the main thread), a Node.js
    process that compiles Playwright's bundled JavaScript at each start unless Node (>= 22.1)
    may cache the result (NODE_COMPILE_CACHE):
    measured here 0.55 -> 0.44 s of CPU per start, 12% of the CPU of the browser-heavy test
    files. The cache is ~/.cache/newsbench/node (XDG_CACHE_HOME honoured); one already set in
    the environment is kept, and a cache that cannot be written is only slower."""
    if "NODE_COMPILE_CACHE" not in os.environ:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        os.environ["NODE_COMPILE_CACHE"] = str(Path(base) / "newsbench" / "node")


def playwright() -> PlaywrightContextManager:
    """`async_playwright()`, its driver keeping its compiled code (`keep_node_compiled`)."""
    keep_node_compiled()
    return async_playwright()


def find_chromium(explicit: str | None = None, headless: bool = True) -> str | None:
    """Path of the browser to launch (`explicit` if given, else the system's, its headless
    shell first when `headless`); None means Playwright's bundled browser."""
    if explicit:
        if not Path(explicit).exists():
            raise FileNotFoundError(f"browser executable not found: {explicit}")
        return explicit
    candidates = (SYSTEM_HEADLESS_SHELL if headless else ()) + SYSTEM_CHROMIUM
    for candidate in candidates:
        if Path(candidate).exists():
            return candidate
    names = (("chromium-headless-shell",) if headless else ()) + ("chromium", "chromium-browser")
    return next((found for name in names if (found := shutil.which(name))), None)


@dataclass
class BrowserOptions:
    executable_path: str | None = None
    headless: bool = True
    routing: Routing = field(default_factory=Routing)
    viewport: tuple[int, int] = (1366, 900)
    locale: str = "en-US"
    timezone: str = "UTC"

    def launch_kwargs(self) -> dict:
        kwargs: dict = {
            "headless": self.headless,
            "args": CHROMIUM_ARGS + self.routing.chromium_args(),
        }
        path = find_chromium(self.executable_path, self.headless)
        if path:
            kwargs["executable_path"] = path
        if self.routing.playwright_proxy():
            kwargs["proxy"] = self.routing.playwright_proxy()
        return kwargs

    def context_kwargs(self) -> dict:
        width, height = self.viewport
        return {
            "viewport": {"width": width, "height": height},
            "locale": self.locale,
            "timezone_id": self.timezone,
            "service_workers": "block",
        }


# Browsers kept between batches: a batch uses at most two sets of options (live and offline),
# and a test worker moves from one newsroom's options to the next.
KEEP_BROWSERS = 2


class BrowserSession:
    """The driver and browsers kept on one event loop (`browser_session.run_batch`'s)."""

    def __init__(self) -> None:
        self._manager: PlaywrightContextManager | None = None
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


class BrowserPool:
    """The browsers a batch's runs open their contexts in, launched on first use and relaunched
    when one died; `pw` is the batch's Playwright. With a `session` (`browser_session`), the
    browsers are the session's, kept open after the batch."""

    def __init__(self, options: BrowserOptions, session: BrowserSession | None = None) -> None:
        self.options = options
        self.session = session
        self._browsers: dict[bool, Browser] = {}  # live, and offline (replay) when used
        self._lock = asyncio.Lock()

    def _options(self, offline: bool) -> BrowserOptions:
        """Replayed runs get a browser that resolves no host and has no proxy: nothing they
        ask for can reach any server, the live site included."""
        return replace(self.options, routing=Routing.offline()) if offline else self.options

    async def browser(self, pw, offline: bool = False) -> Browser:
        async with self._lock:
            browser = self._browsers.get(offline)
            if browser is None or not browser.is_connected():
                launch = self._options(offline).launch_kwargs()
                if self.session is not None:
                    browser = await self.session.browser(pw, launch)
                else:
                    browser = await pw.chromium.launch(**launch)
                self._browsers[offline] = browser
            return browser

    async def new_context(
        self, pw, kwargs: dict, offline: bool = False
    ) -> tuple[Browser, BrowserContext]:
        """A fresh context; a browser that died under an earlier run (its disconnect not yet
        noticed) is replaced once."""
        for attempt in (0, 1):
            browser = await self.browser(pw, offline)
            try:
                return browser, await browser.new_context(**kwargs)
            except PlaywrightError:
                if attempt:
                    raise
                async with self._lock:
                    if self._browsers.get(offline) is browser:
                        del self._browsers[offline]
                    if self.session is not None:
                        self.session.forget(browser)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(browser.close(), 5)
        raise AssertionError("unreachable")

    async def own_browser(
        self, pw, context_kwargs: dict, offline: bool = False
    ) -> tuple[BrowserContext, CdpGuard, str]:
        """A Chromium of the run's own (its profile dir to remove after the run), its default
        context reached only through a CdpGuard."""
        port = free_port()
        own_dir = tempfile.mkdtemp(prefix="newsbench-cdp-")
        launch = self._options(offline).launch_kwargs()
        launch["args"] = [
            *launch["args"],
            f"--remote-debugging-port={port}",
            "--remote-debugging-address=127.0.0.1",
        ]
        try:
            context = await pw.chromium.launch_persistent_context(
                own_dir, **launch, **context_kwargs
            )
            guard = CdpGuard(port)
            await guard.start()
        except BaseException:
            shutil.rmtree(own_dir, ignore_errors=True)
            raise
        return context, guard, own_dir

    async def close(self) -> None:
        """Closes the batch's browsers (a session's stay open for the next batch)."""
        if self.session is None:
            for browser in self._browsers.values():
                with contextlib.suppress(PlaywrightError):
                    await browser.close()
        self._browsers.clear()
