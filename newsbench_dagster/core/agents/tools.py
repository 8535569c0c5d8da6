"""The tool API an agent drives the browser with: navigation, element actions (click, type,
select, check, press, scroll), reading (text, metadata, links, page record, accessibility
snapshot, screenshot), tabs, and answers.

Every call is one step: it is timed, recorded in the trajectory and counted against the step
(and byte) budget; answering is the exception. The harness owns the page; agents only reach it
through these calls (or, for adapters that bring their own browser logic, through the page the
harness hands them). A target that matches nothing is the agent's mistake, reported as
`{"ok": False, "error": ...}`, never raised; a call that names no target at all is a bug in
the adapter and raises ValueError.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import BrowserContext, Locator, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from newsbench_dagster.core.reading.metadata import PAGE_METADATA_JS, parse_jsonld
from newsbench_dagster.core.reading.page import understand

ACTION_TIMEOUT_MS = 5_000
NAVIGATION_TIMEOUT_MS = 15_000
MAX_WAIT_S = 10.0
DOM_SLICE_MAX_BYTES = 32 * 1024
SNAPSHOT_MAX_BYTES = 64 * 1024


NOT_SITE_ERRORS = ("ERR_BLOCKED_BY_CLIENT", "interrupted by another navigation")


_LINKS_JS = """() => Array.from(document.querySelectorAll('a[href]'))
  .map(a => ({text: (a.innerText || a.textContent || '').trim(), href: a.href}))
  .filter(a => a.href.startsWith('http'))"""

# The target grown outward while its outerHTML still fits: the element with as much of its
# surroundings (form, fieldset, card) as a slice can hold. Sizes are UTF-8 bytes. Also says
# whether the target holds a secret (password, card data), whose typed value is not recorded.
_DOM_SLICE_JS = """(el, limit) => {
  const size = (s) => new TextEncoder().encode(s).length;
  const ac = (el.getAttribute('autocomplete') || '').toLowerCase();
  const secret = el.type === 'password' || /(^|\\s)cc-/.test(ac);
  let best = el.outerHTML;
  if (size(best) > limit) return [best, secret];
  let node = el;
  while (node.parentElement) {
    const html = node.parentElement.outerHTML;
    if (size(html) > limit) break;
    node = node.parentElement;
    best = html;
  }
  return [best, secret];
}"""

_SCROLL_JS = """(dy) => { window.scrollBy({top: dy, left: 0, behavior: "instant"});
  return window.scrollY; }"""

_TARGET_KEYS = ("selector", "role", "name", "label", "text", "placeholder")


class BudgetExceeded(Exception):
    """The agent used more steps, tokens or bytes than the task allows."""


@dataclass
class Answer:
    value: dict[str, Any]
    seconds: float  # since the agent started
    claims_success: bool


@dataclass
class Trajectory:
    steps: list[dict] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    tokens: int = 0
    # Navigations to an allowed site that failed at the network level (or 5xx): evidence that
    # the environment, not the agent, broke.
    site_errors: list[str] = field(default_factory=list)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _truncate_utf8(text: str, limit: int) -> tuple[str, bool]:
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text, False
    return raw[:limit].decode("utf-8", errors="ignore"), True


def _png_size(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (bytes 16..24)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n" or len(png) < 24:
        raise ValueError("screenshot is not a PNG")
    width, height = struct.unpack(">II", png[16:24])
    return width, height


class BrowserTools:
    def __init__(
        self,
        page: Page,
        *,
        max_steps: int,
        max_tokens: int,
        max_bytes: int | None = None,
        bytes_used: Callable[[], int] = lambda: 0,
    ) -> None:
        self._page = page
        self.max_steps = max_steps
        self.max_tokens = max_tokens
        self.max_bytes = max_bytes
        self.bytes_used = bytes_used
        self.trajectory = Trajectory()
        self.dom_slices: list[dict] = []
        # Set by the runner for adapters that attach their own client over CDP.
        self.cdp_url: str | None = None
        # How long an element action waits for its target; lower it to fail fast.
        self.action_timeout_ms = ACTION_TIMEOUT_MS
        self._t0 = time.perf_counter()

    # -- the active tab ----------------------------------------------------------------------
    @property
    def page(self) -> Page:
        """The active tab. If it closed under the agent (window.close(), a crash), the most
        recent open tab of the context takes over, so the next action still has a page."""
        if self._page.is_closed():
            open_pages = [p for p in self._page.context.pages if not p.is_closed()]
            if open_pages:
                self._page = open_pages[-1]
        return self._page

    @page.setter
    def page(self, page: Page) -> None:
        self._page = page

    @property
    def context(self) -> BrowserContext:
        return self._page.context

    def _open_pages(self) -> list[Page]:
        return [p for p in self.context.pages if not p.is_closed()]

    # -- bookkeeping -------------------------------------------------------------------------
    def elapsed(self) -> float:
        return time.perf_counter() - self._t0

    @property
    def steps(self) -> int:
        """Browser actions taken; answering is not an action and is never refused."""
        return sum(1 for s in self.trajectory.steps if s["tool"] != "answer")

    def _step(self, tool: str, args: dict, *, budgeted: bool = True) -> dict:
        if budgeted:
            if self.steps >= self.max_steps:
                raise BudgetExceeded(f"step budget of {self.max_steps} exhausted at {tool}")
            if self.max_bytes is not None and self.bytes_used() > self.max_bytes:
                raise BudgetExceeded(f"byte budget of {self.max_bytes} exhausted at {tool}")
        entry = {"tool": tool, "args": args, "t": round(self.elapsed(), 3), "status": "ok"}
        self.trajectory.steps.append(entry)
        return entry

    def _finish(self, entry: dict, started: float, **extra: Any) -> None:
        entry["latency_ms"] = round((time.perf_counter() - started) * 1000, 1)
        entry.update(extra)

    def _fail(self, entry: dict, started: float, e: BaseException, **extra: Any) -> dict:
        msg = _first_line(e)
        self._finish(entry, started, status="error", error=msg)
        return {"ok": False, "error": msg, **extra}

    def record(
        self,
        tool: str,
        args: dict,
        *,
        status: str = "ok",
        error: str | None = None,
        budgeted: bool = False,
        **extra: Any,
    ) -> dict:
        """A step an adapter took outside these tools (its own browser logic, a malformed
        model call), in the trajectory like the tools' own; `budgeted` steps count against
        the step budget."""
        entry = self._step(tool, args, budgeted=budgeted)
        entry.update(status=status, latency_ms=0.0, **extra)
        if error is not None:
            entry["error"] = error
        return entry

    def use_tokens(self, n: int) -> None:
        """Adapters backed by a model report the tokens each step used."""
        self.trajectory.tokens += n
        if self.trajectory.tokens > self.max_tokens:
            raise BudgetExceeded(f"token budget of {self.max_tokens} exhausted")

    # -- targets -----------------------------------------------------------------------------
    def _target(
        self, tool: str, target: dict[str, str | None], *, enabled: bool = False
    ) -> tuple[Locator, dict]:
        """The first element a target names: a CSS selector, a role (with its accessible
        name), a label, a placeholder or a visible text; `text` beside another kind narrows
        it to elements containing that text. With `enabled`, disabled controls are passed
        over, as a person passes over a greyed-out button (a control that is disabled only
        until the page is ready is waited for)."""
        locator, args = self._match(tool, target)
        if enabled:
            locator = locator.and_(self.page.locator(":not(:disabled)"))
        return locator.first, args

    def _match(self, tool: str, target: dict[str, str | None]) -> tuple[Locator, dict]:
        args = {k: v for k, v in target.items() if v is not None}
        page = self.page
        selector, role, name = args.get("selector"), args.get("role"), args.get("name")
        label, text, placeholder = args.get("label"), args.get("text"), args.get("placeholder")
        if name is not None and role is None:
            raise ValueError(f"{tool}: name is the accessible name of a role; give role too")
        if selector:
            locator = page.locator(selector)
        elif role:
            locator = page.get_by_role(role, name=name)  # type: ignore[arg-type]
        elif label:
            locator = page.get_by_label(label)
        elif placeholder:
            locator = page.get_by_placeholder(placeholder)
        elif text:
            return page.get_by_text(text), args
        else:
            raise ValueError(
                f"{tool} needs a target: one of selector, role (+ name), label, text, placeholder"
            )
        if text:
            locator = locator.filter(has_text=text)
        return locator, args

    async def _resolve(self, locator: Locator) -> None:
        """Wait for the target to exist; a miss raises PlaywrightTimeout after the timeout."""
        await locator.wait_for(state="attached", timeout=self.action_timeout_ms)

    async def _slice(self, tool: str, locator: Locator) -> bool:
        """Keep the DOM around the target before acting on it; never fails the action.
        Returns whether the target is a secret field (password, card data)."""
        step = len(self.trajectory.steps) - 1
        try:
            html, secret = await locator.evaluate(
                _DOM_SLICE_JS, DOM_SLICE_MAX_BYTES, timeout=self.action_timeout_ms
            )
        except (PlaywrightError, PlaywrightTimeout, TypeError, ValueError):
            return False
        html, _ = _truncate_utf8(str(html), DOM_SLICE_MAX_BYTES)
        self.dom_slices.append({"step": step, "tool": tool, "url": self.page.url, "html": html})
        return bool(secret)

    async def _settle(self, before: str) -> None:
        """After an action that may navigate, wait for the new document to be usable."""
        if self.page.url != before:
            await self.page.wait_for_load_state("domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)

    # -- navigation --------------------------------------------------------------------------
    async def goto(self, url: str) -> dict:
        entry, started = self._step("goto", {"url": url}), time.perf_counter()
        try:
            resp = await self.page.goto(
                url, wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS
            )
        except (PlaywrightError, PlaywrightTimeout) as e:
            msg = _first_line(e)
            self._finish(entry, started, status="error", error=msg)
            # Neither a blocked request nor a navigation superseded by Chromium's own error
            # page (which a blocked navigation leaves behind) says anything about the site.
            if not any(m in msg for m in NOT_SITE_ERRORS):
                self.trajectory.site_errors.append(f"goto {url}: {msg}")
            return {"ok": False, "error": msg}
        status = resp.status if resp else None
        if status is not None and status >= 500:
            self.trajectory.site_errors.append(f"goto {url}: HTTP {status}")
        self._finish(entry, started, status="ok", http_status=status, url=self.page.url)
        return {"ok": status is None or status < 400, "url": self.page.url, "status": status}

    async def back(self) -> dict:
        entry, started = self._step("back", {}), time.perf_counter()
        try:
            await self.page.go_back(wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
        except (PlaywrightError, PlaywrightTimeout) as e:
            return self._fail(entry, started, e)
        self._finish(entry, started, url=self.page.url)
        return {"ok": True, "url": self.page.url}

    # -- element actions ---------------------------------------------------------------------
    async def click(
        self,
        selector: str | None = None,
        *,
        role: str | None = None,
        name: str | None = None,
        label: str | None = None,
        text: str | None = None,
        placeholder: str | None = None,
    ) -> dict:
        """Click the first element the target names; waits for a navigation it starts."""
        locator, args = self._target("click", _target_args(locals()), enabled=True)
        entry, started = self._step("click", args), time.perf_counter()
        before, tabs_before = self.page.url, len(self._open_pages())
        try:
            await self._resolve(locator)
            await self._slice("click", locator)
            await locator.click(timeout=self.action_timeout_ms)
            await self._settle(before)
        except (PlaywrightError, PlaywrightTimeout) as e:
            return self._fail(entry, started, e)
        extra = {"tabs": len(self._open_pages())} if len(self._open_pages()) != tabs_before else {}
        self._finish(entry, started, url=self.page.url, **extra)
        return {"ok": True, "url": self.page.url}

    async def type(
        self,
        value: str,
        selector: str | None = None,
        *,
        role: str | None = None,
        name: str | None = None,
        label: str | None = None,
        text: str | None = None,
        placeholder: str | None = None,
        clear: bool = True,
    ) -> dict:
        """Type into a field; `clear=False` appends to what it holds."""
        locator, args = self._target("type", _target_args(locals()), enabled=True)
        # What was typed is kept in the trajectory, except in password and card fields.
        entry = self._step("type", {**args, "value": value, "clear": clear})
        started = time.perf_counter()
        try:
            await self._resolve(locator)
            if await self._slice("type", locator):
                entry["args"]["value"] = f"<secret: {len(value)} characters>"
            if clear:
                await locator.fill(value, timeout=self.action_timeout_ms)
            else:
                await locator.focus(timeout=self.action_timeout_ms)
                await self.page.keyboard.press("ControlOrMeta+End")
                await locator.press_sequentially(value, timeout=self.action_timeout_ms)
        except (PlaywrightError, PlaywrightTimeout) as e:
            return self._fail(entry, started, e)
        self._finish(entry, started, url=self.page.url)
        return {"ok": True}

    async def select(
        self,
        option: str,
        selector: str | None = None,
        *,
        role: str | None = None,
        name: str | None = None,
        label: str | None = None,
        text: str | None = None,
        placeholder: str | None = None,
    ) -> dict:
        """Choose an option of a <select> by its value or its visible label."""
        locator, args = self._target("select", _target_args(locals()), enabled=True)
        entry, started = self._step("select", {**args, "option": option}), time.perf_counter()
        try:
            await self._resolve(locator)
            await self._slice("select", locator)
            selected = await locator.select_option(option, timeout=self.action_timeout_ms)
        except (PlaywrightError, PlaywrightTimeout) as e:
            return self._fail(entry, started, e)
        self._finish(entry, started, url=self.page.url, selected=selected)
        return {"ok": True, "selected": selected}

    async def check(
        self,
        selector: str | None = None,
        *,
        checked: bool = True,
        role: str | None = None,
        name: str | None = None,
        label: str | None = None,
        text: str | None = None,
        placeholder: str | None = None,
    ) -> dict:
        """Tick (or untick) a checkbox, or pick a radio button."""
        locator, args = self._target("check", _target_args(locals()), enabled=True)
        entry, started = self._step("check", {**args, "checked": checked}), time.perf_counter()
        try:
            await self._resolve(locator)
            await self._slice("check", locator)
            await locator.set_checked(checked, timeout=self.action_timeout_ms)
            state = await locator.is_checked(timeout=self.action_timeout_ms)
        except (PlaywrightError, PlaywrightTimeout) as e:
            return self._fail(entry, started, e)
        self._finish(entry, started, url=self.page.url, checked=state)
        return {"ok": True, "checked": state}

    async def press(
        self,
        key: str,
        selector: str | None = None,
        *,
        role: str | None = None,
        name: str | None = None,
        label: str | None = None,
        text: str | None = None,
        placeholder: str | None = None,
    ) -> dict:
        """Press a key (Playwright names: "Enter", "Tab", "Control+A") on a target, or on
        the page's keyboard (wherever the focus is) when none is given."""
        target = _target_args(locals())
        has_target = any(v is not None for v in target.values())
        locator, args = self._target("press", target, enabled=True) if has_target else (None, {})
        entry, started = self._step("press", {**args, "key": key}), time.perf_counter()
        before = self.page.url
        try:
            if locator is None:
                await self.page.keyboard.press(key)
            else:
                await self._resolve(locator)
                await self._slice("press", locator)
                await locator.press(key, timeout=self.action_timeout_ms)
            await self._settle(before)
        except (PlaywrightError, PlaywrightTimeout) as e:
            return self._fail(entry, started, e)
        self._finish(entry, started, url=self.page.url)
        return {"ok": True, "url": self.page.url}

    async def scroll(
        self,
        direction: str = "down",
        amount: int = 800,
        selector: str | None = None,
        *,
        role: str | None = None,
        name: str | None = None,
        label: str | None = None,
        text: str | None = None,
        placeholder: str | None = None,
    ) -> dict:
        """Scroll the page by `amount` pixels, or bring a target into view."""
        if direction not in ("down", "up"):
            raise ValueError(f"scroll: direction must be 'down' or 'up', not {direction!r}")
        if not isinstance(amount, int) or amount < 0:
            raise ValueError(f"scroll: amount must be a non-negative int, not {amount!r}")
        target = _target_args(locals())
        has_target = any(v is not None for v in target.values())
        locator, args = self._target("scroll", target) if has_target else (None, {})
        args = args or {"direction": direction, "amount": amount}
        entry, started = self._step("scroll", args), time.perf_counter()
        try:
            if locator is None:
                dy = amount if direction == "down" else -amount
                scroll_y = await self.page.evaluate(_SCROLL_JS, dy)
            else:
                await self._resolve(locator)
                await locator.scroll_into_view_if_needed(timeout=self.action_timeout_ms)
                scroll_y = await self.page.evaluate("() => window.scrollY")
        except (PlaywrightError, PlaywrightTimeout) as e:
            return self._fail(entry, started, e)
        self._finish(entry, started, url=self.page.url, scroll_y=scroll_y)
        return {"ok": True, "scroll_y": scroll_y}

    async def wait(
        self, seconds: float = 1.0, *, text: str | None = None, selector: str | None = None
    ) -> dict:
        """Let the page work: sleep, or wait (up to `seconds`) for a text or selector to be
        visible. Never longer than MAX_WAIT_S."""
        if not isinstance(seconds, int | float) or seconds < 0:
            raise ValueError(f"wait: seconds must be a non-negative number, not {seconds!r}")
        seconds = min(float(seconds), MAX_WAIT_S)
        args: dict[str, Any] = {"seconds": seconds}
        args.update({k: v for k, v in {"text": text, "selector": selector}.items() if v})
        entry, started = self._step("wait", args), time.perf_counter()
        try:
            if selector:
                locator = self.page.locator(selector)
                if text:
                    locator = locator.filter(has_text=text)
            elif text:
                locator = self.page.get_by_text(text)
            else:
                await asyncio.sleep(seconds)
                self._finish(entry, started)
                return {"ok": True}
            await locator.first.wait_for(state="visible", timeout=max(seconds * 1000, 1))
        except (PlaywrightError, PlaywrightTimeout) as e:
            return self._fail(entry, started, e)
        self._finish(entry, started, url=self.page.url)
        return {"ok": True}

    # -- reading -----------------------------------------------------------------------------
    async def extract_text(
        self,
        selector: str | None = None,
        *,
        role: str | None = None,
        name: str | None = None,
        label: str | None = None,
        text: str | None = None,
        placeholder: str | None = None,
    ) -> dict:
        """The visible text of the first element the target names, spaces collapsed; an
        element that is not there right now is `not_found` (no waiting)."""
        locator, args = self._target("extract_text", _target_args(locals()))
        entry, started = self._step("extract_text", args), time.perf_counter()
        try:
            if await locator.count() == 0:
                self._finish(entry, started, status="not_found")
                return {"ok": False, "text": None, "error": f"no element matches {args}"}
            found = await locator.inner_text(timeout=self.action_timeout_ms)
        except (PlaywrightError, PlaywrightTimeout) as e:
            return self._fail(entry, started, e, text=None)
        self._finish(entry, started)
        return {"ok": True, "text": " ".join(found.split())}

    async def get_metadata(self) -> dict:
        entry, started = self._step("get_metadata", {}), time.perf_counter()
        raw = await self.page.evaluate(PAGE_METADATA_JS)
        nodes, errors = parse_jsonld(raw["jsonld"])
        self._finish(entry, started)
        return {
            "url": raw["url"],
            "title": raw["title"],
            "meta": {k: v[0] for k, v in raw["meta"].items()},
            "meta_all": raw["meta"],
            "jsonld": nodes,
            "jsonld_errors": errors,
            "canonical": raw["canonical"],
            "lang": raw["lang"],
        }

    async def links(self, text: str | None = None) -> dict:
        """The page's links (visible text and absolute URL) in document order; with `text`,
        only those whose text equals it, ignoring case and spacing."""
        entry, started = self._step("links", {"text": text} if text else {}), time.perf_counter()
        try:
            found = await self.page.evaluate(_LINKS_JS)
        except PlaywrightError as e:
            self._finish(entry, started, status="error", error=_first_line(e))
            return {"ok": False, "links": []}
        if text is not None:
            want = " ".join(text.split()).casefold()
            found = [a for a in found if " ".join(a["text"].split()).casefold() == want]
        self._finish(entry, started, found=len(found))
        return {"ok": True, "links": found}

    async def read_page(self) -> dict:
        """The current page read into a page record (core.page_understanding): headline
        candidates, authors, times, live-blog updates, corrections, fact box, teasers, kind.
        The same reading the oracles use; an unreadable page gives an empty record."""
        entry, started = self._step("read_page", {}), time.perf_counter()
        try:
            html = await self.page.content()
        except PlaywrightError as e:
            self._finish(entry, started, status="error", error=_first_line(e))
            return {}
        record = understand(html, url=self.page.url).as_dict()
        self._finish(entry, started, kind=record.get("kind"))
        return record

    async def accessibility_snapshot(self) -> dict:
        """Playwright's ARIA snapshot of the page body (YAML: roles, names, states), cut at
        SNAPSHOT_MAX_BYTES with `truncated` saying so."""
        entry, started = self._step("accessibility_snapshot", {}), time.perf_counter()
        try:
            snapshot = await self.page.locator("body").aria_snapshot(timeout=self.action_timeout_ms)
        except (PlaywrightError, PlaywrightTimeout) as e:
            return self._fail(entry, started, e, snapshot="", truncated=False)
        snapshot, truncated = _truncate_utf8(snapshot, SNAPSHOT_MAX_BYTES)
        self._finish(entry, started, url=self.page.url, truncated=truncated)
        return {"ok": True, "snapshot": snapshot, "truncated": truncated}

    async def screenshot(self, full_page: bool = False) -> dict:
        """A PNG of the viewport (or the whole page)."""
        entry, started = self._step("screenshot", {"full_page": full_page}), time.perf_counter()
        try:
            png = await self.page.screenshot(
                type="png", full_page=full_page, timeout=NAVIGATION_TIMEOUT_MS
            )
        except (PlaywrightError, PlaywrightTimeout) as e:
            return self._fail(entry, started, e)
        width, height = _png_size(png)
        self._finish(entry, started, url=self.page.url, bytes=len(png))
        return {"ok": True, "png": png, "width": width, "height": height}

    # -- tabs --------------------------------------------------------------------------------
    async def tabs(self) -> dict:
        """The context's open tabs (including those the site opened), in opening order."""
        entry, started = self._step("tabs", {}), time.perf_counter()
        active = self.page
        out = []
        for i, p in enumerate(self._open_pages()):
            try:
                title = await p.title()
            except PlaywrightError:
                title = ""  # closed or navigating while we asked
            out.append({"index": i, "url": p.url, "title": title, "active": p is active})
        self._finish(entry, started, found=len(out))
        return {"ok": True, "tabs": out}

    async def open_tab(self, url: str | None = None) -> dict:
        """Open a new tab (optionally at `url`) and make it the active one."""
        entry, started = self._step("open_tab", {"url": url} if url else {}), time.perf_counter()
        try:
            page = await self.context.new_page()
        except PlaywrightError as e:
            return self._fail(entry, started, e)
        self._page = page
        index = self._open_pages().index(page)
        if url:
            try:
                await page.goto(url, wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
            except (PlaywrightError, PlaywrightTimeout) as e:
                return self._fail(entry, started, e, index=index, url=page.url)
        self._finish(entry, started, url=page.url, index=index)
        return {"ok": True, "index": index, "url": page.url}

    async def switch_tab(self, index: int) -> dict:
        entry, started = self._step("switch_tab", {"index": index}), time.perf_counter()
        pages = self._open_pages()
        if not isinstance(index, int) or not 0 <= index < len(pages):
            msg = f"no tab {index!r}: {len(pages)} tab(s) open"
            self._finish(entry, started, status="error", error=msg)
            return {"ok": False, "error": msg}
        self._page = pages[index]
        try:
            await self._page.bring_to_front()
        except PlaywrightError as e:
            return self._fail(entry, started, e)
        self._finish(entry, started, url=self._page.url)
        return {"ok": True, "url": self._page.url}

    async def close_tab(self, index: int | None = None) -> dict:
        """Close a tab (the active one by default); the last open tab is never closed."""
        entry = self._step("close_tab", {"index": index} if index is not None else {})
        started = time.perf_counter()
        pages = self._open_pages()
        active = self.page
        if index is None:
            index = pages.index(active) if active in pages else len(pages) - 1
        if not isinstance(index, int) or not 0 <= index < len(pages):
            msg = f"no tab {index!r}: {len(pages)} tab(s) open"
        elif len(pages) <= 1:
            msg = "refusing to close the last open tab"
        else:
            msg = ""
        if msg:
            self._finish(entry, started, status="error", error=msg)
            return {"ok": False, "error": msg}
        victim = pages[index]
        try:
            await victim.close()
        except PlaywrightError as e:
            return self._fail(entry, started, e)
        if victim is active:  # the tab to its left (or the new first one) takes over
            self._page = self._open_pages()[max(index - 1, 0)]
        self._finish(entry, started, url=self.page.url)
        return {"ok": True}

    # -- answering ---------------------------------------------------------------------------
    async def answer(self, value: dict[str, Any], *, claims_success: bool = True) -> dict:
        """Submit an answer. Agents may answer more than once; each answer's time is kept."""
        entry = self._step("answer", {"value": value}, budgeted=False)
        entry["latency_ms"] = 0.0
        self.trajectory.answers.append(Answer(value, round(self.elapsed(), 3), claims_success))
        return {"ok": True}


def _target_args(scope: dict[str, Any]) -> dict[str, str | None]:
    """The target keyword arguments out of a tool method's locals()."""
    return {k: scope.get(k) for k in _TARGET_KEYS}
