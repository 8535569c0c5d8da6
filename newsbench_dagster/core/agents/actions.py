"""The tool API's actions, what changes the page: navigation (goto, back) and element actions
(click, type, select, check, press, scroll, wait).

They are mixed into BrowserTools (core.agents.tools), which holds the page, the trajectory
and the budget: PageActions declares what it uses of them. Element actions resolve their
target (core.agents.targets), keep the DOM around it before acting, and wait for a
navigation they start.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal, Unpack
from urllib.parse import urljoin, urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Locator, Page
from pydantic import NonNegativeInt

from newsbench_dagster.core.agents.targets import (
    DOM_SLICE_JS,
    DOM_SLICE_MAX_BYTES,
    Target,
    locate,
    names_target,
)
from newsbench_dagster.core.agents.trajectory import ToolStep, Trajectory, truncate_utf8

NAVIGATION_TIMEOUT_MS = 15_000
MAX_WAIT_S = 10.0

NOT_SITE_ERRORS = ("ERR_BLOCKED_BY_CLIENT", "interrupted by another navigation")
# What a failed navigation of an http(s) URL must say to be the site's failure: a network
# error or a timeout. Anything else (an invalid URL a model made up, Chromium's own error page
# as a base for a relative one) is about what the agent asked for.
SITE_ERROR_MARKS = ("net::ERR_", "Timeout")

_SCROLL_JS = """(dy) => { window.scrollBy({top: dy, left: 0, behavior: "instant"});
  return window.scrollY; }"""


class PageActions:
    """Navigation and element actions; BrowserTools provides what is declared here."""

    page: Page
    trajectory: Trajectory
    dom_slices: list[dict]
    action_timeout_ms: int
    _step: Callable[..., ToolStep]
    _open_pages: Callable[[], list[Page]]

    # -- targets -----------------------------------------------------------------------------
    def _target(
        self, tool: str, selector: str | None, target: Target, *, enabled: bool = False
    ) -> tuple[Locator, dict]:
        return locate(self.page, tool, selector, target, enabled=enabled)

    async def _resolve(self, locator: Locator) -> None:
        """Wait for the target to exist; a miss raises PlaywrightTimeout after the timeout."""
        await locator.wait_for(state="attached", timeout=self.action_timeout_ms)

    async def _slice(self, tool: str, locator: Locator) -> bool:
        """Keep the DOM around the target before acting on it; never fails the action.
        Returns whether the target is a secret field (password, card data)."""
        step = len(self.trajectory.steps) - 1
        try:
            html, secret = await locator.evaluate(
                DOM_SLICE_JS, DOM_SLICE_MAX_BYTES, timeout=self.action_timeout_ms
            )
        except (PlaywrightError, TypeError, ValueError):
            return False
        html, _ = truncate_utf8(str(html), DOM_SLICE_MAX_BYTES)
        self.dom_slices.append({"step": step, "tool": tool, "url": self.page.url, "html": html})
        return bool(secret)

    async def _settle(self, before: str) -> None:
        """After an action that may navigate, wait for the new document to be usable."""
        if self.page.url != before:
            await self.page.wait_for_load_state("domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)

    # -- navigation --------------------------------------------------------------------------
    async def goto(self, url: str) -> dict:
        """Open a URL in the current tab (a relative URL is resolved against the page's).

        A navigation that fails at the network level (or answers 5xx) is kept as a site error:
        evidence that the environment, not the agent, broke."""
        with self._step("goto", {"url": url}) as step:
            url = urljoin(self.page.url, url) if isinstance(url, str) else url
            resp = await self.page.goto(
                url, wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS
            )
            status = resp.status if resp else None
            if status is not None and status >= 500:
                self.trajectory.site_errors.append(f"goto {url}: HTTP {status}")
            step.note(http_status=status, url=self.page.url)
            return {"ok": status is None or status < 400, "url": self.page.url, "status": status}
        # Neither a blocked request nor a navigation superseded by Chromium's own error page
        # (which a blocked navigation leaves behind) says anything about the site.
        error = step.error or ""
        web = isinstance(url, str) and urlsplit(url).scheme in ("http", "https")
        if (
            web
            and any(m in error for m in SITE_ERROR_MARKS)
            and not any(m in error for m in NOT_SITE_ERRORS)
        ):
            self.trajectory.site_errors.append(f"goto {url}: {step.error}")
        return step.failure()

    async def back(self) -> dict:
        """Go back in history."""
        with self._step("back", {}) as step:
            await self.page.go_back(wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
            step.note(url=self.page.url)
            return {"ok": True, "url": self.page.url}
        return step.failure()

    # -- element actions ---------------------------------------------------------------------
    async def click(self, selector: str | None = None, **target: Unpack[Target]) -> dict:
        """Click an element; a navigation it starts is waited for."""
        locator, args = self._target("click", selector, target, enabled=True)
        with self._step("click", args) as step:
            before, tabs_before = self.page.url, len(self._open_pages())
            await self._resolve(locator)
            await self._slice("click", locator)
            await locator.click(timeout=self.action_timeout_ms)
            await self._settle(before)
            tabs = len(self._open_pages())
            step.note(url=self.page.url, **({"tabs": tabs} if tabs != tabs_before else {}))
            return {"ok": True, "url": self.page.url}
        return step.failure()

    async def type(
        self,
        value: str,
        selector: str | None = None,
        *,
        clear: bool = True,
        **target: Unpack[Target],
    ) -> dict:
        """Type into a field (clears it first unless clear=false).

        Args:
            value: the text to type
            clear: false appends to what the field holds
        """
        locator, args = self._target("type", selector, target, enabled=True)
        with self._step("type", {**args, "value": value, "clear": clear}) as step:
            await self._resolve(locator)
            # What was typed is kept in the trajectory, except in password and card fields.
            if await self._slice("type", locator):
                step.entry["args"]["value"] = f"<secret: {len(value)} characters>"
            if clear:
                await locator.fill(value, timeout=self.action_timeout_ms)
            else:
                await locator.focus(timeout=self.action_timeout_ms)
                await self.page.keyboard.press("ControlOrMeta+End")
                await locator.press_sequentially(value, timeout=self.action_timeout_ms)
            step.note(url=self.page.url)
            return {"ok": True}
        return step.failure()

    async def select(
        self, option: str, selector: str | None = None, **target: Unpack[Target]
    ) -> dict:
        """Pick an option of a <select> by its value or its visible label.

        Args:
            option: the option's value or visible label
        """
        locator, args = self._target("select", selector, target, enabled=True)
        with self._step("select", {**args, "option": option}) as step:
            await self._resolve(locator)
            await self._slice("select", locator)
            selected = await locator.select_option(option, timeout=self.action_timeout_ms)
            step.note(url=self.page.url, selected=selected)
            return {"ok": True, "selected": selected}
        return step.failure()

    async def check(
        self,
        selector: str | None = None,
        *,
        checked: bool = True,
        **target: Unpack[Target],
    ) -> dict:
        """Tick (checked=true) or untick a checkbox, or pick a radio button."""
        locator, args = self._target("check", selector, target, enabled=True)
        with self._step("check", {**args, "checked": checked}) as step:
            await self._resolve(locator)
            await self._slice("check", locator)
            await locator.set_checked(checked, timeout=self.action_timeout_ms)
            state = await locator.is_checked(timeout=self.action_timeout_ms)
            step.note(url=self.page.url, checked=state)
            return {"ok": True, "checked": state}
        return step.failure()

    async def press(self, key: str, selector: str | None = None, **target: Unpack[Target]) -> dict:
        """Press a key (Enter, Tab, Control+A...) on an element, or where the focus is.

        Args:
            key: a Playwright key name, e.g. Enter, Tab, Control+A
        """
        named = names_target(selector, target)
        locator, args = (
            self._target("press", selector, target, enabled=True) if named else (None, {})
        )
        with self._step("press", {**args, "key": key}) as step:
            before = self.page.url
            if locator is None:
                await self.page.keyboard.press(key)
            else:
                await self._resolve(locator)
                await self._slice("press", locator)
                await locator.press(key, timeout=self.action_timeout_ms)
            await self._settle(before)
            step.note(url=self.page.url)
            return {"ok": True, "url": self.page.url}
        return step.failure()

    async def scroll(
        self,
        direction: Literal["down", "up"] = "down",
        amount: NonNegativeInt = 800,
        selector: str | None = None,
        **target: Unpack[Target],
    ) -> dict:
        """Scroll the page up or down by `amount` pixels, or bring an element into view."""
        if direction not in ("down", "up"):
            raise ValueError(f"scroll: direction must be 'down' or 'up', not {direction!r}")
        if not isinstance(amount, int) or amount < 0:
            raise ValueError(f"scroll: amount must be a non-negative int, not {amount!r}")
        named = names_target(selector, target)
        locator, args = self._target("scroll", selector, target) if named else (None, {})
        with self._step("scroll", args or {"direction": direction, "amount": amount}) as step:
            if locator is None:
                dy = amount if direction == "down" else -amount
                scroll_y = await self.page.evaluate(_SCROLL_JS, dy)
            else:
                await self._resolve(locator)
                await locator.scroll_into_view_if_needed(timeout=self.action_timeout_ms)
                scroll_y = await self.page.evaluate("() => window.scrollY")
            step.note(url=self.page.url, scroll_y=scroll_y)
            return {"ok": True, "scroll_y": scroll_y}
        return step.failure()

    async def wait(
        self, seconds: float = 1.0, *, text: str | None = None, selector: str | None = None
    ) -> dict:
        """Wait a few seconds, or until a text or selector is visible (at most 10 s).

        Never longer than MAX_WAIT_S, whatever `seconds` says.

        Args:
            seconds: how long to sleep, or at most to wait for the text or selector
            text: visible text to wait for (alone, or narrowing the selector)
            selector: CSS selector of an element to wait for
        """
        if not isinstance(seconds, int | float) or seconds < 0:
            raise ValueError(f"wait: seconds must be a non-negative number, not {seconds!r}")
        seconds = min(float(seconds), MAX_WAIT_S)
        args: dict[str, Any] = {"seconds": seconds}
        args.update({k: v for k, v in {"text": text, "selector": selector}.items() if v})
        with self._step("wait", args) as step:
            if selector:
                locator = self.page.locator(selector)
                if text:
                    locator = locator.filter(has_text=text)
            elif text:
                locator = self.page.get_by_text(text)
            else:
                await asyncio.sleep(seconds)
                return {"ok": True}
            await locator.first.wait_for(state="visible", timeout=max(seconds * 1000, 1))
            step.note(url=self.page.url)
            return {"ok": True}
        return step.failure()
