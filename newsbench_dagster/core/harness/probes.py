"""Probes: the harness's own looks at pages besides the entry and the final one, before,
during and after the agent works, each in a context of its own (its own world scope, so a
probe never counts against the run). With the entry and final observations they bracket the
run: an answer that matches any state seen in that window is right."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from playwright.async_api import Browser
from playwright.async_api import Error as PlaywrightError

from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.harness.failures import first_line
from newsbench_dagster.core.harness.guard import Pacer, task_robots
from newsbench_dagster.core.harness.observe import observe
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.harness.state import world_scope
from newsbench_dagster.core.replay.replayer import ReplaySession
from newsbench_dagster.core.scoring.checkers import Evidence, check
from newsbench_dagster.core.web.network import RobotsRules
from newsbench_dagster.core.web.sites import origin_of

# Probes for tasks that name none: intents whose right answer moves while the agent works
# (the lead) have the entry page looked at again at the end of the run.
DEFAULT_PROBES = {
    "find_top_headline": [
        {"url": "{entry}", "when": "during"},
        {"url": "{entry}", "when": "after"},
    ]
}
PROBE_TIMEOUT_MS = 10_000


def same_url(a: str | None, b: str | None) -> bool:
    return bool(a and b) and a.split("#", 1)[0].rstrip("/") == b.split("#", 1)[0].rstrip("/")


class ProbePool:
    """A new page costs a renderer start (~100 ms, measured): probes reuse pages, one pool
    per context configuration. Each page never uses the HTTP cache (a probe must see the page
    as served now) and is wiped (cookies, the probed origin's storage) and parked on
    about:blank between uses, so no probe sees another's state. A slot is (context, page,
    CDP session)."""

    def __init__(self, settings: RunSettings) -> None:
        self.settings = settings
        self._free: dict[str, list[tuple]] = {}

    def clear(self) -> None:
        self._free.clear()  # its pages go with the browser

    async def take(self, browser: Browser, kwargs: dict) -> tuple:
        free = self._free.setdefault(json.dumps(kwargs, sort_keys=True), [])
        while free:
            slot = free.pop()
            if not slot[1].is_closed() and slot[0].browser is browser:
                return slot
        context = await browser.new_context(**kwargs)
        page = await context.new_page()
        session = await context.new_cdp_session(page)
        await session.send("Network.enable")
        await session.send("Network.setCacheDisabled", {"cacheDisabled": True})
        return context, page, session

    async def give_back(self, kwargs: dict, slot: tuple, url: str) -> None:
        context, page, session = slot
        try:
            await context.clear_cookies()
            await session.send(
                "Storage.clearDataForOrigin", {"origin": origin_of(url), "storageTypes": "all"}
            )
            await page.goto("about:blank")
        except PlaywrightError:
            await self.drop(slot)
            return
        self._free.setdefault(json.dumps(kwargs, sort_keys=True), []).append(slot)

    async def drop(self, slot: tuple | None) -> None:
        if slot is not None:
            with contextlib.suppress(Exception):  # cleanup must never raise
                await asyncio.wait_for(slot[0].close(), self.settings.cleanup_timeout_s)


class Prober:
    """The probes of every run of a batch: what to look at when, and the looks."""

    def __init__(
        self, settings: RunSettings, options: BrowserOptions, robots: RobotsRules, pacer: Pacer
    ) -> None:
        self.settings = settings
        self.options = options
        self.robots = robots
        self.pacer = pacer
        self.pool = ProbePool(settings)

    def plan(self, task: dict, when: str, final_obs: dict | None, answer: Any) -> list[str]:
        """The URLs to look at `when` ("before", "during" or "after" the agent), from the
        task's oracle section (or the intent's default): "{entry}" is the entry page,
        "{answer.FIELD}" a URL the agent answered with; only allowlisted, robots-allowed URLs
        are probed, and an after-probe of the page the final observation already shows is
        skipped."""
        if not self.settings.probes:
            return []
        spec = (task.get("oracle") or {}).get("probes")
        if spec is None:
            spec = DEFAULT_PROBES.get(task["intent"], [])
        urls: list[str] = []
        for probe in spec:
            if probe.get("when") != when:
                continue
            url = probe["url"]
            if url == "{entry}":
                url = task["entry_url"]
            elif url.startswith("{answer.") and url.endswith("}"):
                value = answer.get(url[8:-1]) if isinstance(answer, dict) else None
                if not isinstance(value, str):
                    continue
                url = value
            if not url.startswith(("http://", "https://")):
                continue
            if origin_of(url) not in task["allowed_origins"] or not self._robots(task).allows(url):
                continue
            if when == "after" and same_url((final_obs or {}).get("url"), url):
                continue  # the final observation already is that page at the end
            if url not in urls:
                urls.append(url)
        return urls

    def _robots(self, task: dict) -> RobotsRules:
        return task_robots(task, self.robots, self.settings.base_dir)

    async def sample_during(
        self, browser: Browser, task: dict, row: dict, probes: list[dict], done: asyncio.Event
    ) -> None:
        """Every `during_every_s` seconds of the agent's run, up to `during_max` times, the
        task's "during" probes, appended to `probes`; stops when `done` is set."""
        if not self.plan(task, "during", None, None):
            return
        for _ in range(self.settings.during_max):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), self.settings.during_every_s)
            if done.is_set():
                return
            probes += await self.probe(browser, task, row, "during")

    async def probe(
        self,
        browser: Browser,
        task: dict,
        row: dict,
        when: str,
        final_obs: dict | None = None,
        answer: Any = None,
    ) -> list[dict]:
        """The pages planned for `when`, observed; a failed probe is recorded, never fatal."""
        return [
            await self._look(browser, url, when, row)
            for url in self.plan(task, when, final_obs, answer)
        ]

    async def after(
        self,
        browser: Browser,
        task: dict,
        row: dict,
        seen: Evidence,
        answer: Any,
    ) -> list[dict]:
        """The after-probes, looked at only when the answer fails against what the run has
        already seen (`seen`: entry, final and earlier probes). A probe can only add states an
        answer may match, so an answer already accepted cannot be turned down by one; the
        skip is on the record (observation.probes_skipped)."""
        urls = self.plan(task, "after", seen.final, answer)
        if urls and _accepted(task, answer, seen):
            row["observation"]["probes_skipped"] = {"after": urls}
            return []
        return [await self._look(browser, url, "after", row) for url in urls]

    async def _look(self, browser: Browser, url: str, when: str, row: dict) -> dict:
        probe: dict[str, Any] = {"url": url, "when": when}
        # Seen as the run's reader sees it (same device, geo, consent modal), but never
        # throttled: a probe is the harness's look, not part of the run.
        profile = row.get("_profile")
        kwargs = self.options.context_kwargs()
        kwargs.update(profile.context_kwargs() if profile else {})
        headers = {
            **self.options.routing.browser_headers(f"{world_scope(row)}.probe"),
            **(profile.extra_headers() if profile else {}),
        }
        slot = None
        harness: ReplaySession | None = row.get("_replay")
        try:
            if harness is not None:
                # A replayed probe: its own context, answered from the recording (by the
                # harness's session, so it never consumes what the agent is served).
                context = await browser.new_context(**kwargs)
                slot = (context, await context.new_page(), None)
                await harness.attach(context, harness.recording.clock_at(url))
            else:
                slot = await self.pool.take(browser, kwargs)
                await slot[1].set_extra_http_headers(headers)
            page = slot[1]
            await self.pacer.wait(origin_of(url), harness is not None)
            await page.goto(url, wait_until="domcontentloaded", timeout=PROBE_TIMEOUT_MS)
            probe["obs"] = await asyncio.wait_for(observe(page), self.settings.observe_timeout_s)
        except (PlaywrightError, TimeoutError) as e:
            probe["error"] = first_line(e)
            await self.pool.drop(slot)
            slot = None
        finally:
            if slot is not None and harness is not None:
                await self.pool.drop(slot)
            elif slot is not None:
                await self.pool.give_back(kwargs, slot, url)
        return probe


def _accepted(task: dict, answer: Any, seen: Evidence) -> bool:
    """The checker's verdict on what was seen so far; a checker that breaks means look."""
    try:
        return check(task["intent"], answer, evidence=seen).success
    except Exception:  # noqa: BLE001 - scoring proper reports it; here it only means "probe"
        return False
