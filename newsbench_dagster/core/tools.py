"""The tool API an agent drives the browser with: goto, click, extract_text, get_metadata, answer.

Every call is one step: it is timed, recorded in the trajectory and counted against the step
budget. The harness owns the page; agents only reach it through these calls (or, for
adapters that bring their own browser logic, through the page the harness hands them).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page
from playwright.async_api import TimeoutError as PlaywrightTimeout

from newsbench_dagster.core.page_metadata import PAGE_METADATA_JS, parse_jsonld
from newsbench_dagster.core.page_understanding import understand

ACTION_TIMEOUT_MS = 5_000
NAVIGATION_TIMEOUT_MS = 15_000


NOT_SITE_ERRORS = ("ERR_BLOCKED_BY_CLIENT", "interrupted by another navigation")


_LINKS_JS = """() => Array.from(document.querySelectorAll('a[href]'))
  .map(a => ({text: (a.innerText || a.textContent || '').trim(), href: a.href}))
  .filter(a => a.href.startsWith('http'))"""


class BudgetExceeded(Exception):
    """The agent used more steps (or tokens) than the task allows."""


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


class BrowserTools:
    def __init__(self, page: Page, *, max_steps: int, max_tokens: int) -> None:
        self.page = page
        self.max_steps = max_steps
        self.max_tokens = max_tokens
        self.trajectory = Trajectory()
        self._t0 = time.perf_counter()

    # -- bookkeeping -------------------------------------------------------------------------
    def elapsed(self) -> float:
        return time.perf_counter() - self._t0

    @property
    def steps(self) -> int:
        """Browser actions taken; answering is not an action and is never refused."""
        return sum(1 for s in self.trajectory.steps if s["tool"] != "answer")

    def _step(self, tool: str, args: dict, *, budgeted: bool = True) -> dict:
        if budgeted and self.steps >= self.max_steps:
            raise BudgetExceeded(f"step budget of {self.max_steps} exhausted at {tool}")
        entry = {"tool": tool, "args": args, "t": round(self.elapsed(), 3), "status": "ok"}
        self.trajectory.steps.append(entry)
        return entry

    def _finish(self, entry: dict, started: float, **extra: Any) -> None:
        entry["latency_ms"] = round((time.perf_counter() - started) * 1000, 1)
        entry.update(extra)

    def use_tokens(self, n: int) -> None:
        """Adapters backed by a model report the tokens each step used."""
        self.trajectory.tokens += n
        if self.trajectory.tokens > self.max_tokens:
            raise BudgetExceeded(f"token budget of {self.max_tokens} exhausted")

    # -- tools -------------------------------------------------------------------------------
    async def goto(self, url: str) -> dict:
        entry, started = self._step("goto", {"url": url}), time.perf_counter()
        try:
            resp = await self.page.goto(
                url, wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS
            )
        except (PlaywrightError, PlaywrightTimeout) as e:
            msg = str(e).splitlines()[0]
            self._finish(entry, started, status="error", error=msg)
            # Neither a blocked request nor a navigation superseded by Chromium's own error
            # page (which a blocked navigation leaves behind) says anything about the site.
            if not any(m in msg for m in NOT_SITE_ERRORS):
                self.trajectory.site_errors.append(f"goto {url}: {msg}")
            return {"ok": False, "error": msg}
        status = resp.status if resp else None
        if status is not None and status >= 500:
            self.trajectory.site_errors.append(f"goto {url}: HTTP {status}")
        self._finish(entry, started, status="ok", http_status=status)
        return {"ok": status is None or status < 400, "url": self.page.url, "status": status}

    async def click(
        self,
        selector: str | None = None,
        *,
        text: str | None = None,
        role: str | None = None,
        name: str | None = None,
    ) -> dict:
        """Click the first element matching a CSS selector, a visible text, or a role + name."""
        args = {
            k: v
            for k, v in {"selector": selector, "text": text, "role": role, "name": name}.items()
            if v
        }
        entry, started = self._step("click", args), time.perf_counter()
        if selector:
            locator = self.page.locator(selector)
        elif role:
            locator = self.page.get_by_role(role, name=name)  # type: ignore[arg-type]
        elif text:
            locator = self.page.get_by_text(text)
        else:
            raise ValueError("click needs a selector, a text or a role")
        before = self.page.url
        try:
            await locator.first.click(timeout=ACTION_TIMEOUT_MS)
            if self.page.url != before:
                await self.page.wait_for_load_state(
                    "domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS
                )
        except (PlaywrightError, PlaywrightTimeout) as e:
            msg = str(e).splitlines()[0]
            self._finish(entry, started, status="error", error=msg)
            return {"ok": False, "error": msg}
        self._finish(entry, started, url=self.page.url)
        return {"ok": True, "url": self.page.url}

    async def extract_text(self, selector: str) -> dict:
        entry, started = self._step("extract_text", {"selector": selector}), time.perf_counter()
        locator = self.page.locator(selector)
        try:
            if await locator.count() == 0:
                self._finish(entry, started, status="not_found")
                return {"ok": False, "text": None}
            text = await locator.first.inner_text(timeout=ACTION_TIMEOUT_MS)
        except (PlaywrightError, PlaywrightTimeout) as e:
            self._finish(entry, started, status="error", error=str(e).splitlines()[0])
            return {"ok": False, "text": None}
        self._finish(entry, started)
        return {"ok": True, "text": " ".join(text.split())}

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
            self._finish(entry, started, status="error", error=str(e).splitlines()[0])
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
            self._finish(entry, started, status="error", error=str(e).splitlines()[0])
            return {}
        record = understand(html, url=self.page.url).as_dict()
        self._finish(entry, started, kind=record.get("kind"))
        return record

    async def answer(self, value: dict[str, Any], *, claims_success: bool = True) -> dict:
        """Submit an answer. Agents may answer more than once; each answer's time is kept."""
        entry = self._step("answer", {"value": value}, budgeted=False)
        entry["latency_ms"] = 0.0
        self.trajectory.answers.append(Answer(value, round(self.elapsed(), 3), claims_success))
        return {"ok": True}
