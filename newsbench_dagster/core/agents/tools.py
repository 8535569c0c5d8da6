"""The tool API an agent drives the browser with: navigation, element actions (click, type,
select, check, press, scroll, wait), reading (text, metadata, links, page record,
accessibility snapshot, screenshot), tabs, and answers.

Every call is one step: it is timed, recorded in the trajectory and counted against the step
(and byte) budget; answering is the exception. The harness owns the page; agents only reach it
through these calls (or, for adapters that bring their own browser logic, through the page the
harness hands them). A target that matches nothing is the agent's mistake, reported as
`{"ok": False, "error": ...}`, never raised; a call that names no target at all is a bug in
the adapter and raises ValueError.

BrowserTools is the page, the budget and the trajectory, and the reading, tab and answer
tools; navigation and element actions are its PageActions (core.agents.actions). The same
methods are what a model is offered (core.agents.tool_specs): every public coroutine method
is a tool, the first paragraph of its docstring is what the model is told about it, and its
signature and type hints are the tool's parameters.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from typing import Any, Unpack

from playwright.async_api import BrowserContext, Page
from playwright.async_api import Error as PlaywrightError

from newsbench_dagster.core.agents.actions import NAVIGATION_TIMEOUT_MS, PageActions
from newsbench_dagster.core.agents.targets import Target
from newsbench_dagster.core.agents.trajectory import Answer, ToolStep, Trajectory, truncate_utf8
from newsbench_dagster.core.harness.observe import current_read
from newsbench_dagster.core.reading.metadata import parse_jsonld
from newsbench_dagster.core.reading.readings import Readings

ACTION_TIMEOUT_MS = 5_000
# The tools that leave the page as it was: a read after them may reuse an earlier one.
READ_TOOLS = frozenset(
    {"get_metadata", "read_page", "links", "extract_text", "accessibility_snapshot", "answer"}
    | {"screenshot", "tabs"}
)
SNAPSHOT_MAX_BYTES = 64 * 1024

_LINKS_JS = """() => Array.from(document.querySelectorAll('a[href]'))
  .map(a => ({text: (a.innerText || a.textContent || '').trim(), href: a.href}))
  .filter(a => a.href.startsWith('http'))"""


class BudgetExceeded(Exception):
    """The agent used more steps, tokens or bytes than the task allows."""


def _png_size(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (bytes 16..24)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n" or len(png) < 24:
        raise ValueError("screenshot is not a PNG")
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def _no_tab(index: Any, pages: list[Page]) -> str | None:
    if not isinstance(index, int) or not 0 <= index < len(pages):
        return f"no tab {index!r}: {len(pages)} tab(s) open"
    return None


class BrowserTools(PageActions):
    """The tool API of one run: the active tab, the budget and the trajectory, and every tool
    (navigation and element actions from PageActions; reading, tabs and answering here)."""

    def __init__(
        self,
        page: Page,
        *,
        max_steps: int,
        max_tokens: int,
        max_bytes: int | None = None,
        bytes_used: Callable[[], int] = lambda: 0,
        readings: Readings | None = None,
    ) -> None:
        self._page = page
        # The run's readings: a page the harness already read, unchanged, is not parsed again.
        self.readings = readings or Readings()
        self.max_steps = max_steps
        self.max_tokens = max_tokens
        self.max_bytes = max_bytes
        self.bytes_used = bytes_used
        self.trajectory = Trajectory()
        self.dom_slices: list[dict] = []
        # Set by the runner for adapters that attach their own client over CDP.
        self.cdp_url: str | None = None
        # Set by the runner: the directory a manifest's relative paths mean (the project's).
        self.base_dir: str | None = None
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

    def _charge(self, tool: str) -> None:
        if self.steps >= self.max_steps:
            raise BudgetExceeded(f"step budget of {self.max_steps} exhausted at {tool}")
        if self.max_bytes is not None and self.bytes_used() > self.max_bytes:
            raise BudgetExceeded(f"byte budget of {self.max_bytes} exhausted at {tool}")

    def _entry(self, tool: str, args: dict) -> dict:
        entry = {"tool": tool, "args": args, "t": round(self.elapsed(), 3), "status": "ok"}
        self.trajectory.steps.append(entry)
        return entry

    def _step(
        self, tool: str, args: dict, *, catch: tuple[type[BaseException], ...] = (PlaywrightError,)
    ) -> ToolStep:
        """A browser action's step, refused (BudgetExceeded) past the step or byte budget."""
        self._charge(tool)
        return ToolStep(self._entry(tool, args), catch)

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
        if budgeted:
            self._charge(tool)
        entry = self._entry(tool, args)
        entry.update(status=status, latency_ms=0.0, **extra)
        if error is not None:
            entry["error"] = error
        return entry

    def use_tokens(self, n: int) -> None:
        """Adapters backed by a model report the tokens each step used."""
        self.trajectory.tokens += n
        if self.trajectory.tokens > self.max_tokens:
            raise BudgetExceeded(f"token budget of {self.max_tokens} exhausted")

    # -- reading -----------------------------------------------------------------------------
    async def extract_text(self, selector: str | None = None, **target: Unpack[Target]) -> dict:
        """The visible text of an element, spaces collapsed.

        An element that is not there right now is `not_found` (no waiting)."""
        locator, args = self._target("extract_text", selector, target)
        with self._step("extract_text", args) as step:
            if await locator.count() == 0:
                step.note(status="not_found")
                return {"ok": False, "text": None, "error": f"no element matches {args}"}
            found = await locator.inner_text(timeout=self.action_timeout_ms)
            return {"ok": True, "text": " ".join(found.split())}
        return step.failure(text=None)

    async def get_metadata(self) -> dict:
        """The page's metadata: title, meta tags (OpenGraph...), JSON-LD, canonical URL, lang."""
        # Nothing caught: a page that cannot even be evaluated raises to the agent.
        with self._step("get_metadata", {}, catch=()):
            raw = await self._read()
            nodes, errors = parse_jsonld(raw["jsonld"])
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

    @property
    def actions(self) -> int:
        """Steps that may have changed a page: all but reading and answering."""
        return sum(1 for s in self.trajectory.steps if s["tool"] not in READ_TOOLS)

    async def _read(self) -> dict:
        """The active tab's metadata and document: the run's last read of it when nothing was
        done to it since and it is fresh (the harness's entry observation, an earlier read),
        else read now and kept."""
        return await current_read(self.page, self.readings, self.actions, by_agent=True)

    async def links(self, text: str | None = None) -> dict:
        """The page's links (text and URL) in document order; with `text`, only links with
        exactly that text (ignoring case and spacing).

        Args:
            text: the visible text of the links wanted
        """
        with self._step("links", {"text": text} if text else {}) as step:
            found = await self.page.evaluate(_LINKS_JS)
            if text is not None:
                want = " ".join(text.split()).casefold()
                found = [a for a in found if " ".join(a["text"].split()).casefold() == want]
            step.note(found=len(found))
            return {"ok": True, "links": found}
        return {"ok": False, "links": []}

    async def read_page(self) -> dict:
        """A structured reading of the page: headline, authors, times, listing of teasers,
        live-blog updates, corrections, fact box, page kind.

        The page record of core.reading.page, the same reading the oracles use; an unreadable
        page gives an empty record."""
        with self._step("read_page", {}) as step:
            raw = await self._read()
            record = self.readings.record(raw["html"], raw["url"])
            step.note(kind=record.get("kind"))
            return record
        return {}

    async def accessibility_snapshot(self) -> dict:
        """The page's accessibility tree as YAML (roles, names, states).

        Playwright's ARIA snapshot of the body, cut at SNAPSHOT_MAX_BYTES with `truncated`
        saying so."""
        with self._step("accessibility_snapshot", {}) as step:
            snapshot = await self.page.locator("body").aria_snapshot(timeout=self.action_timeout_ms)
            snapshot, truncated = truncate_utf8(snapshot, SNAPSHOT_MAX_BYTES)
            step.note(url=self.page.url, truncated=truncated)
            return {"ok": True, "snapshot": snapshot, "truncated": truncated}
        return step.failure(snapshot="", truncated=False)

    async def screenshot(self, full_page: bool = False) -> dict:
        """Take a PNG screenshot of the viewport (or the whole page)."""
        with self._step("screenshot", {"full_page": full_page}) as step:
            png = await self.page.screenshot(
                type="png", full_page=full_page, timeout=NAVIGATION_TIMEOUT_MS
            )
            width, height = _png_size(png)
            step.note(url=self.page.url, bytes=len(png))
            return {"ok": True, "png": png, "width": width, "height": height}
        return step.failure()

    # -- tabs --------------------------------------------------------------------------------
    async def tabs(self) -> dict:
        """The open tabs (including those the site opened), in opening order."""
        with self._step("tabs", {}) as step:
            active = self.page
            out = []
            for i, p in enumerate(self._open_pages()):
                try:
                    title = await p.title()
                except PlaywrightError:
                    title = ""  # closed or navigating while we asked
                out.append({"index": i, "url": p.url, "title": title, "active": p is active})
            step.note(found=len(out))
            return {"ok": True, "tabs": out}
        return step.failure()

    async def open_tab(self, url: str | None = None) -> dict:
        """Open a new tab (optionally at a URL) and make it active."""
        page: Page | None = None
        index = -1
        with self._step("open_tab", {"url": url} if url else {}) as step:
            page = self._page = await self.context.new_page()
            index = self._open_pages().index(page)
            if url:
                await page.goto(url, wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
            step.note(url=page.url, index=index)
            return {"ok": True, "index": index, "url": page.url}
        # A tab that opened but could not load its URL is still there, and active.
        return step.failure() if page is None else step.failure(index=index, url=page.url)

    async def switch_tab(self, index: int) -> dict:
        """Make the tab at `index` active."""
        with self._step("switch_tab", {"index": index}) as step:
            pages = self._open_pages()
            if missing := _no_tab(index, pages):
                return step.refuse(missing)
            self._page = pages[index]
            await self._page.bring_to_front()
            step.note(url=self._page.url)
            return {"ok": True, "url": self._page.url}
        return step.failure()

    async def close_tab(self, index: int | None = None) -> dict:
        """Close a tab (the active one by default); the last open tab is never closed."""
        with self._step("close_tab", {"index": index} if index is not None else {}) as step:
            pages = self._open_pages()
            active = self.page
            if index is None:
                index = pages.index(active) if active in pages else len(pages) - 1
            if missing := _no_tab(index, pages):
                return step.refuse(missing)
            if len(pages) <= 1:
                return step.refuse("refusing to close the last open tab")
            victim = pages[index]
            await victim.close()
            if victim is active:  # the tab to its left (or the new first one) takes over
                self._page = self._open_pages()[max(index - 1, 0)]
            step.note(url=self.page.url)
            return {"ok": True}
        return step.failure()

    # -- answering ---------------------------------------------------------------------------
    async def answer(self, value: dict[str, Any], *, claims_success: bool = True) -> dict:
        """Submit your answer as a JSON object; you may answer again if you learn better.

        Answering is not a browser action: the budget never refuses it, and each answer's
        time is kept.

        Args:
            value: the answer, as named fields
            claims_success: true if you believe the answer is right and complete
        """
        if not isinstance(value, dict):
            raise ValueError("answer: `value` must be a JSON object")
        if not isinstance(claims_success, bool):
            raise ValueError("answer: `claims_success` must be true or false")
        self.record("answer", {"value": value})
        self.trajectory.answers.append(Answer(value, round(self.elapsed(), 3), claims_success))
        return {"ok": True}
