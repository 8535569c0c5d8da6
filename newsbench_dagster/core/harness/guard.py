"""The run's egress: every request its pages make goes through `RequestGuard` (the task's
allowed origins and robots.txt; a refusal the agent caused is a safety event), is paced per
origin across the pool (`Pacer`), and is answered from the recording (a replayed run), kept
for one (recording a live run) or sent on. `RunListeners` account for what the guard never
sees (redirect hops) and keep the HAR-lite and the console errors."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import BrowserContext, Page, Request, Route
from playwright.async_api import Error as PlaywrightError

from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.harness.state import RunState
from newsbench_dagster.core.replay.recorder import capture
from newsbench_dagster.core.replay.replayer import Recording, recording_path
from newsbench_dagster.core.web.network import RequestRecord, RobotsRules
from newsbench_dagster.core.web.sites import origin_of


def task_recording(task: dict, base_dir: str | None) -> Recording | None:
    """The recording a task names instead of the live site (None: a live task)."""
    spec = task.get("replay")
    if not spec:
        return None
    base = Path(base_dir or ".")
    rules = tuple(str(recording_path(r, base)) for r in spec.get("rules") or ())
    allow_truncated = bool(spec.get("allow_truncated"))
    return Recording.open(recording_path(spec["recording"], base), rules, allow_truncated)


def task_robots(task: Any, robots: RobotsRules, base_dir: str | None) -> RobotsRules:
    """robots.txt as the run's world serves it: the recording's, for a replayed task."""
    recording = task_recording(task, base_dir) if isinstance(task, dict) else None
    return recording.robots_rules() if recording is not None else robots


class Pacer:
    """Per-origin spacing of page loads across the whole pool: the larger of the site's rate
    limit (`RunSettings.min_interval`) and robots.txt's Crawl-delay."""

    def __init__(self, settings: RunSettings, robots: RobotsRules) -> None:
        self.settings = settings
        self.robots = robots
        self._locks: dict[str, asyncio.Lock] = {}
        self._last_load: dict[str, float] = {}

    def gap(self, origin: str) -> float:
        """Seconds between two page loads of `origin` (0: loads are not paced)."""
        if not self.settings.pace:
            return 0.0
        return max(self.settings.min_interval.get(origin, 0.0), self.robots.crawl_delay(origin))

    async def wait(self, origin: str, replayed: bool = False) -> float:
        """Wait for this origin's turn; returns the seconds waited."""
        if replayed:
            return 0.0
        gap = self.gap(origin)
        if gap <= 0:
            return 0.0
        lock = self._locks.setdefault(origin, asyncio.Lock())
        async with lock:
            wait = self._last_load.get(origin, -1e9) + gap - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._last_load[origin] = time.monotonic()
        return max(wait, 0.0)


def _escaped(text: str) -> str:
    """`text` as a literal in a regular expression Python and JavaScript read alike."""
    return re.sub(r"([\\^$.|?*+()\[\]{}/])", r"\\\1", text)


def unguarded_urls(task: dict, state: RunState, robots: RobotsRules, pacer: Pacer, record: Any):
    """The URLs of a live run the guard's handler need not see, as a pattern: on an allowed
    origin whose loads are not paced, under no path its robots.txt could refuse (see
    RobotsRules.disallowed_prefixes), without a percent escape. Chromium still asks Playwright
    about every request; these are let through without a round trip to this process (~5 ms
    each, measured), and `RunListeners.on_request` puts them on the record as the guard would.
    None (replayed or recorded runs): every request goes to the guard."""
    if state.recording is not None or record is not None:
        return None
    alternatives = []
    for origin in sorted(task["allowed_origins"]):
        prefixes = robots.disallowed_prefixes(origin)
        if prefixes is None or "/" in prefixes or "" in prefixes or pacer.gap(origin) > 0:
            continue
        refused = "|".join(_escaped(p) for p in prefixes)
        alternatives.append(_escaped(origin) + "(?=/)" + (f"(?!{refused})" if refused else ""))
    if not alternatives:
        return None
    return re.compile(f"^(?:{'|'.join(alternatives)})[^%]*$")


def guarded_urls(unguarded: re.Pattern | None) -> re.Pattern | str:
    """What the guard's handler is routed: every URL but the unguarded ones."""
    return "**/*" if unguarded is None else re.compile(f"^(?!{unguarded.pattern[1:]})")


def har_entry(request: Request, state: RunState, **fields: Any) -> dict:
    """A HAR-lite entry for `request`, timed from the run's start."""
    return {
        "url": request.url,
        "method": request.method,
        "type": request.resource_type,
        "start_ms": round((time.perf_counter() - state.t0) * 1000, 1),
        **fields,
    }


def _on_record(request: Request, state: RunState) -> None:
    """An allowed request of the agent's, in the run's request log."""
    state.requests.append(
        RequestRecord(
            request.url,
            origin_of(request.url),
            True,
            True,
            True,
            None,
            actor="agent",
            method=request.method,
        )
    )


def _har_opened(request: Request, state: RunState) -> None:
    """An allowed request's HAR-lite entry, its response still to come."""
    state.har[request] = har_entry(
        request, state, wall=round(time.time(), 3), status=None, bytes=0, duration_ms=None
    )


class RequestGuard:
    """The route handler of one run's context."""

    def __init__(
        self,
        task: dict,
        state: RunState,
        robots: RobotsRules,
        pacer: Pacer,
        record: Any = None,
        capture_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.allowed = set(task["allowed_origins"])
        self.state = state
        self.robots = state.recording.robots_rules() if state.recording else robots
        self.pacer = pacer
        self.record = record  # a WarcRecorder for a live run being recorded
        self.capture_client = capture_client

    async def __call__(self, route: Route) -> None:
        url = route.request.url
        if not url.startswith(("http://", "https://")):
            await route.continue_()
            return
        origin = origin_of(url)
        on_list = origin in self.allowed
        robots_ok = self.robots.allows(url) if on_list else True
        recording = self.state.recording
        if on_list and recording is not None and not recording.holds(url):
            robots_ok = True  # no such host in the recording: the replay answers a miss
        if on_list and robots_ok:
            await self._allow(route, origin)
        else:
            await self._refuse(route, origin, on_list, robots_ok)

    async def _allow(self, route: Route, origin: str) -> None:
        request, state = route.request, self.state
        _on_record(request, state)
        if request.resource_type == "document":
            # A recording has no rate limit to respect.
            waited = await self.pacer.wait(origin, state.replay is not None)
            if waited > 0.05:
                state.lifecycle.append({"kind": "paced", "origin": origin, "s": waited})
        _har_opened(request, state)
        if state.replay is not None:
            await state.replay.answer(route)  # from the recording, never the network
        elif self.record is not None and self.capture_client is not None:
            await capture(route, self.record, self.capture_client)
        else:
            await route.continue_()

    async def _refuse(self, route: Route, origin: str, on_list: bool, robots_ok: bool) -> None:
        request, state = route.request, self.state
        if not on_list:
            reason = "off_allowlist"
        elif not self.robots.reachable(origin):
            reason = "robots_unreachable"  # the site's fault, not the agent's
        else:
            reason = "robots_disallowed"
        # A navigation is the agent's doing; a blocked sub-resource (a third-party script
        # the page itself pulls in) is logged but is not held against the agent.
        nav = request.is_navigation_request()
        actor = "agent" if nav and reason != "robots_unreachable" else "page"
        state.requests.append(
            RequestRecord(
                request.url,
                origin,
                on_list,
                robots_ok,
                False,
                None,
                error=f"blocked: {reason}",
                actor=actor,
                method=request.method,
            )
        )
        state.har[request] = har_entry(
            request, state, status=None, bytes=0, duration_ms=0.0, blocked=reason
        )
        if actor == "agent":
            state.safety_events.append({"kind": reason, "url": request.url})
        await route.abort("blockedbyclient")


class RunListeners:
    """The context's events, into the run's state: redirect hops off the allowlist, statuses
    and sizes, durations and failures (HAR-lite), console and page errors; and every tab
    opened gets the run's profile (throttled like the first)."""

    def __init__(
        self, state: RunState, allowed: set[str], profile, unguarded: re.Pattern | None = None
    ) -> None:
        self.state = state
        self.allowed = allowed
        self.profile = profile
        self.unguarded = unguarded  # requests the guard lets through unseen (unguarded_urls)

    def attach(self, context: BrowserContext) -> None:
        state = self.state
        context.on("request", self.on_request)
        context.on("response", self.on_response)
        context.on("requestfailed", self.on_failed)
        context.on("page", self.on_page)
        context.on("console", lambda m: m.type == "error" and state.console_errors.append(m.text))
        context.on("weberror", lambda e: state.console_errors.append(f"pageerror: {e.error}"))

    def on_request(self, req: Request) -> None:
        unseen = self.unguarded is not None and req.redirected_from is None
        if unseen and self.unguarded.match(req.url):
            self._allowed_unseen(req)
            return
        # Redirect hops are not offered to route handlers: account for them here, so a
        # redirect off the allowlist is on the record even though the guard never saw it.
        if req.redirected_from is not None and origin_of(req.url) not in self.allowed:
            self.state.requests.append(
                RequestRecord(
                    req.url,
                    origin_of(req.url),
                    False,
                    True,
                    True,
                    None,
                    error="redirect off allowlist",
                    actor="agent",
                )
            )
            self.state.safety_events.append({"kind": "off_allowlist_redirect", "url": req.url})

    def _allowed_unseen(self, req: Request) -> None:
        """A request the guard let through without its handler, on the record as it keeps one."""
        _on_record(req, self.state)
        _har_opened(req, self.state)

    def on_response(self, resp) -> None:
        size = int(resp.headers.get("content-length") or 0)
        if entry := self.state.har.get(resp.request):
            entry["status"] = resp.status
            entry["bytes"] = size
            self.on_done(resp.request)
        for rec in reversed(self.state.requests):
            if rec.url == resp.url and rec.fetched and rec.status is None:
                rec.status = resp.status
                rec.bytes = size
                break

    # Duration is to the response's headers (or the failure): one event per request
    # fewer than waiting for requestfinished, which the accounting does not need.
    def on_done(self, req: Request) -> None:
        if (entry := self.state.har.get(req)) and entry["duration_ms"] is None:
            now = (time.perf_counter() - self.state.t0) * 1000
            entry["duration_ms"] = round(now - entry["start_ms"], 1)

    def on_failed(self, req: Request) -> None:
        self.on_done(req)
        if (entry := self.state.har.get(req)) is not None and "blocked" not in entry:
            entry["error"] = req.failure or "failed"
        for rec in reversed(self.state.requests):
            if rec.url == req.url and rec.fetched and rec.status is None and not rec.error:
                rec.error = req.failure or "failed"
                break

    async def on_page(self, page: Page) -> None:
        # A tab the agent or the site opens is throttled like the first.
        with contextlib.suppress(PlaywrightError):
            await self.profile.apply(page)
