"""The runner: every task, every agent, N trials, in a real Chromium the harness owns.

Per run: a fresh browser context; every request checked against the task's allowed origins
and robots.txt (refusals are logged as safety events); the harness loads the entry page and
observes it; the agent works under step, token and time budgets; the harness observes the
final page *before* cleanup; cleanup always runs. Infrastructure failures end the run as an
environment failure, never as an agent failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import platform
import shutil
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import Browser, BrowserContext, Page, Request, Route, async_playwright
from playwright.async_api import Error as PlaywrightError

from newsbench_dagster.core.agents.protocol import (
    Agent,
    AgentTask,
    needs_cdp,
    outputs_of,
    settings_of,
)
from newsbench_dagster.core.agents.tools import BrowserTools, BudgetExceeded
from newsbench_dagster.core.artifacts import ArtifactStore
from newsbench_dagster.core.errors import InvalidTask, ModelEndpointError
from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.harness.cdp_guard import CdpGuard
from newsbench_dagster.core.harness.observe import observe
from newsbench_dagster.core.harness.profiles import ProfileCatalog, load_profiles
from newsbench_dagster.core.harness.telemetry import export_run_spans, otlp_endpoint_from_env
from newsbench_dagster.core.replay.recorder import capture
from newsbench_dagster.core.replay.replayer import (
    Recording,
    RecordingError,
    ReplaySession,
    recording_path,
)
from newsbench_dagster.core.scoring.failures import EnvFailure
from newsbench_dagster.core.tasks.contract import validation_errors
from newsbench_dagster.core.web.network import RequestRecord, RobotsRules, Routing
from newsbench_dagster.core.web.sites import origin_of

ENTRY_TIMEOUT_MS = 20_000
# A model agent's context is resent every turn: ten steps of a real agent are ~100k tokens.
DEFAULT_MAX_TOKENS = 200_000

# Every kind of artifact a run can keep; RunSettings.artifacts picks (all by default).
ARTIFACT_KINDS = ("screenshot", "har", "console", "a11y", "dom", "trace", "spans")
A11Y_MAX_CHARS = 256_000


@dataclass
class RunSettings:
    trials: int = 1
    concurrency: int = 2  # browser contexts in flight at once
    screenshot: bool = True
    observe_timeout_s: float = 10.0
    cleanup_timeout_s: float = 10.0
    default_max_seconds: float = 60.0
    entry_timeout_s: float = ENTRY_TIMEOUT_MS / 1000
    during_every_s: float = 10.0  # how often "during" probes sample while the agent works
    during_max: int = 3  # ...and at most how many times per run
    probes: bool = True  # off only to measure what the oracle's own page loads cost
    artifacts: tuple[str, ...] = ARTIFACT_KINDS
    default_max_bytes: int = 50_000_000  # bytes the agent's requests may pull in one run
    # Per-origin spacing of page loads across the whole pool (the sites' rate limits); the
    # larger of this and robots.txt's Crawl-delay applies.
    min_interval: dict[str, float] = field(default_factory=dict)
    pace: bool = True  # off only to measure the harness's own cost (benchmarks)
    # OpenTelemetry: OTLP/HTTP endpoint and headers for the spans; None = a file per run.
    otlp_endpoint: str | None = None
    otlp_headers: dict[str, str] = field(default_factory=dict, repr=False)
    # Draw the device / geo / network a task leaves open from its seed (anti-gaming).
    randomize_profiles: bool = False
    # Which task set this evaluation ran (the nightly full set, or a seeded sample: its seed
    # and task ids), stored with every run so the evaluation can be reproduced.
    task_set: dict[str, Any] | None = None
    # Candidate evaluation: alternate which agent goes first per task and trial (A B, B A),
    # in the evaluation's own run-id namespace; reruns of environment failures count attempts.
    interleave: bool = False
    namespace: str = ""
    attempt: int = 0
    # A rerun batch runs trial `first_trial` (the trial being retried) instead of 0.
    first_trial: int = 0
    # Where a task's relative files are found (its `replay.recording`, rules and grading
    # files); None = the working directory. The edge passes the project root.
    base_dir: str | None = None
    # Record live runs: a `core.recording.WarcRecorder` every allowed request of every run
    # is written to (what the agent and the harness loaded, to replay later).
    record: Any = None

    def keeps(self, kind: str) -> bool:
        return kind in self.artifacts and (kind != "screenshot" or self.screenshot)


@dataclass
class _RunState:
    requests: list[RequestRecord] = field(default_factory=list)
    safety_events: list[dict] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    # HAR-lite: one entry per request the run's pages made, keyed by Playwright's request.
    har: dict[Request, dict] = field(default_factory=dict)
    t0: float = field(default_factory=time.perf_counter)
    lifecycle: list[dict] = field(default_factory=list)  # closes taken from the agent, waits
    closed: asyncio.Event = field(default_factory=asyncio.Event)  # the context went away
    browser: Browser | None = None  # the browser the run's context lives in
    # Replayed runs: the recording, and the sessions answering the agent's and the
    # harness's requests (one log).
    recording: Recording | None = None
    replay: ReplaySession | None = None

    def agent_bytes(self) -> int:
        return sum(r.bytes for r in self.requests if r.actor == "agent" and r.fetched)


# Probes for tasks that name none: intents whose right answer moves while the agent works
# (the lead) have the entry page looked at again at the end of the run.
DEFAULT_PROBES = {
    "find_top_headline": [
        {"url": "{entry}", "when": "during"},
        {"url": "{entry}", "when": "after"},
    ]
}
PROBE_TIMEOUT_MS = 10_000


def _same_url(a: str | None, b: str | None) -> bool:
    return bool(a and b) and a.split("#", 1)[0].rstrip("/") == b.split("#", 1)[0].rstrip("/")


def run_id_for(
    task_id: str, agent_version: str, trial: int, namespace: str = "", attempt: int = 0
) -> str:
    """Deterministic run ids; an evaluation's `namespace` (a candidate's release run) and a
    rerun's `attempt` keep their runs, and artifacts, apart from every other run."""
    key = f"{task_id}|{agent_version}|{trial}"
    if namespace or attempt:
        key += f"|{namespace}|{attempt}"
    key = key.encode()
    return "r-" + hashlib.sha256(key).hexdigest()[:16]


@cache
def _package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("newsbench", "playwright"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "unknown"
    return out


class Runner:
    def __init__(
        self,
        agents: Sequence[Agent],
        *,
        options: BrowserOptions,
        robots: RobotsRules,
        store: ArtifactStore,
        settings: RunSettings | None = None,
        world: dict[str, Any] | None = None,
        profiles: ProfileCatalog | None = None,
    ) -> None:
        self.agents = list(agents)
        self.options = options
        self.robots = robots
        self.store = store
        self.settings = settings or RunSettings()
        self.world = world or {}
        self.profiles = profiles or load_profiles()
        # Spans go to OTLP when configured (here, or by the standard OTEL_* variables).
        self._otlp = (
            (self.settings.otlp_endpoint, self.settings.otlp_headers)
            if self.settings.otlp_endpoint
            else otlp_endpoint_from_env(os.environ)
        )
        self._browsers: dict[bool, Browser] = {}  # live, and offline (replay) when used
        self._browser_lock = asyncio.Lock()
        self._pace_locks: dict[str, asyncio.Lock] = {}
        self._probe_pool: dict[str, list[tuple]] = {}  # (context, page, cdp session)
        self._last_load: dict[str, float] = {}
        self._capture_client: httpx.AsyncClient | None = None  # recording live runs

    # -- browser ----------------------------------------------------------------------------
    def _options(self, offline: bool) -> BrowserOptions:
        """Replayed runs get a browser that resolves no host and has no proxy: nothing they
        ask for can reach any server, the live site included."""
        return replace(self.options, routing=Routing.offline()) if offline else self.options

    async def _ensure_browser(self, pw, offline: bool = False) -> Browser:
        async with self._browser_lock:
            browser = self._browsers.get(offline)
            if browser is None or not browser.is_connected():
                browser = await pw.chromium.launch(**self._options(offline).launch_kwargs())
                self._browsers[offline] = browser
            return browser

    async def _new_context(
        self, pw, kwargs: dict, offline: bool = False
    ) -> tuple[Browser, BrowserContext]:
        """A fresh context; a browser that died under an earlier run (its disconnect not yet
        noticed) is replaced once."""
        for attempt in (0, 1):
            browser = await self._ensure_browser(pw, offline)
            try:
                return browser, await browser.new_context(**kwargs)
            except PlaywrightError:
                if attempt:
                    raise
                async with self._browser_lock:
                    if self._browsers.get(offline) is browser:
                        del self._browsers[offline]
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(browser.close(), 5)
        raise AssertionError("unreachable")

    async def run(
        self, tasks: Sequence[dict], day: date, progress: Callable[[dict], None] | None = None
    ) -> list[dict]:
        jobs = self.schedule(tasks)
        sem = asyncio.Semaphore(self.settings.concurrency)
        if self.settings.record is not None:
            self._capture_client = httpx.AsyncClient(
                proxy=self.options.routing.proxy, trust_env=False, timeout=30
            )
        async with async_playwright() as pw:

            async def one(job):
                async with sem:
                    row = await self._run_one(pw, *job, day=day)
                if progress:
                    progress(row)
                return row

            try:
                rows = await asyncio.gather(*(one(j) for j in jobs))
            finally:
                self._probe_pool.clear()  # its pages go with the browser
                for browser in self._browsers.values():
                    with contextlib.suppress(PlaywrightError):
                        await browser.close()
                self._browsers.clear()
                if self._capture_client is not None:
                    await self._capture_client.aclose()
                    self._capture_client = None
        return sorted(rows, key=lambda r: r["run_id"])

    def schedule(self, tasks: Sequence[dict]) -> list[tuple[dict, Agent, int]]:
        """(task, agent, trial) in the order they start. Interleaved, the agents take turns
        going first (A B, then B A, ...) so that neither always meets the site later, when
        the front page has moved on, or warm, when caches have filled."""
        jobs = []
        for i, task in enumerate(tasks):
            for trial in range(
                self.settings.first_trial, self.settings.first_trial + self.settings.trials
            ):
                flip = self.settings.interleave and (i + trial) % 2 == 1
                jobs += [(task, a, trial) for a in (self.agents[::-1] if flip else self.agents)]
        return jobs

    # -- one run ----------------------------------------------------------------------------
    async def _run_one(self, pw, task: dict, agent: Agent, trial: int, day: date) -> dict:
        manifest = agent.manifest
        fields = task if isinstance(task, dict) else {}  # a malformed task is reported below
        tid = fields.get("id") or "<no id>"
        run_id = run_id_for(
            tid, manifest.agent_version, trial, self.settings.namespace, self.settings.attempt
        )
        started_at = datetime.now(UTC)
        row: dict[str, Any] = {
            "run_id": run_id,
            "task_id": tid,
            "site": fields.get("site"),
            "day": day,
            "intent": fields.get("intent"),
            "entry_url": fields.get("entry_url"),
            "agent_name": manifest.name,
            "agent_version": manifest.agent_version,
            "trial": trial,
            "started_at": started_at,
            "run_status": None,
            "env_failure": None,
            "error": None,
            "steps": 0,
            "tokens": 0,
            "requests": 0,
            "bytes": 0,
            "answer_seconds": None,
            "answer": None,
            "answers": [],
            "self_reported_success": None,
            "observation": None,
            "trajectory": [],
            "request_log": [],
            "safety_events": [],
            "console_errors": [],
            "artifacts": {},
        }
        problems = validation_errors(task)
        if problems:
            # Bad input: record it against the harness, run the other tasks.
            row.update(
                run_status="env_failure",
                env_failure=EnvFailure.INVALID_TASK.value,
                error="; ".join(problems),
            )
            return self._finish(row, task)

        state = _RunState()
        context: BrowserContext | None = None
        tools: BrowserTools | None = None
        guard: CdpGuard | None = None
        own_dir: str | None = None
        try:
            profile = row["_profile"] = self._profile(task)
        except InvalidTask as e:
            row.update(
                run_status="env_failure", env_failure=EnvFailure.INVALID_TASK.value, error=str(e)
            )
            return self._finish(row, task)
        try:
            state.recording = self._recording(task)
        except RecordingError as e:
            row.update(
                run_status="env_failure", env_failure=EnvFailure.INVALID_TASK.value, error=str(e)
            )
            return self._finish(row, task)
        offline = state.recording is not None
        try:
            browser = state.browser = await self._ensure_browser(pw, offline)
            row["environment"] = self._environment(browser, task, agent, profile)
            kwargs = {**self.options.context_kwargs(), **profile.context_kwargs()}
            if needs_cdp(agent):
                # An agent that brings its own browser logic gets a Chromium of its own (it
                # sees no other run's pages) whose default context is the guarded one, reached
                # only through the CDP guard.
                context, guard, own_dir = await self._cdp_browser(pw, kwargs, offline)
                state.browser = context.browser
            else:
                browser, context = await self._new_context(pw, kwargs, offline)
                state.browser = browser
            context.on("close", lambda _: state.closed.set())
            if offline:
                # The recording is the whole web of this run, on the recording's clock.
                state.replay = state.recording.session("agent")
                clock = state.recording.clock_at(task["entry_url"])
                row["replay"] = {
                    **state.recording.describe(),
                    "clock": clock.isoformat(),  # the entry page's, not the recording's start
                    "log": state.replay.log,
                }
                row["_replay"] = state.recording.session("harness", log=state.replay.log)
                await context.clock.install(time=clock)
            elif self.options.routing.run_header:
                row["environment"]["world_scope"] = self._scope(row)
            headers = {
                **({} if offline else self.options.routing.browser_headers(self._scope(row))),
                **profile.extra_headers(),
            }
            if headers:
                await context.set_extra_http_headers(headers)
            if self.settings.keeps("trace"):
                await context.tracing.start(snapshots=True, screenshots=False, sources=False)
            await context.route("**/*", self._guard(task, state))
            self._listen(context, state, set(task["allowed_origins"]), profile)
            page = context.pages[0] if context.pages else await context.new_page()
            await profile.apply(page)
            if guard is not None:
                guard.protected_targets.add(await _target_id(context, page))
            failure = await self._load_entry(page, task, state)
            if failure:
                row.update(run_status="env_failure", env_failure=failure[0].value, error=failure[1])
                await self._artifacts(context, page, row, task, state, None)
                return self._finish(row, task, state)
            entry_obs = await self._observe(page)
            if entry_obs is None:
                row.update(
                    run_status="env_failure",
                    env_failure=EnvFailure.ORACLE_UNAVAILABLE.value,
                    error="could not observe the entry page",
                )
                return self._finish(row, task, state)

            # The window opens: pages the oracle needs besides the entry, seen before the
            # agent can touch anything.
            probes = await self._probes(browser, task, row, "before")

            constraints = task["constraints"]
            tools = BrowserTools(
                page,
                max_steps=constraints.get("max_steps", 15),
                max_tokens=constraints.get("max_tokens", DEFAULT_MAX_TOKENS),
                max_bytes=constraints.get("max_bytes", self.settings.default_max_bytes),
                bytes_used=state.agent_bytes,
            )
            tools.cdp_url = guard.url if guard is not None else None
            tools.run_id = row["run_id"]
            budget = constraints.get("max_seconds", self.settings.default_max_seconds)
            # While the agent works, the harness samples the pages again now and then (a lead
            # can come and go between the two ends of a long run).
            done = asyncio.Event()
            sampler = asyncio.create_task(self._sample_during(browser, task, row, probes, done))
            try:
                status, error = await self._drive(agent, task, tools, budget, state)
            finally:
                # A sample already under way is finished (it saw the page mid-run), then no more.
                done.set()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(sampler, self.settings.observe_timeout_s + 10)
            row.update(run_status=status, error=error)
            if status == "model_unavailable":
                row.update(run_status="env_failure", env_failure=EnvFailure.MODEL_UNAVAILABLE.value)
            if guard is not None:
                state.lifecycle += guard.events
                row["cdp_messages"] = guard.messages

            if state.closed.is_set() or not self._alive(context):
                raise PlaywrightError("browser closed or crashed while the agent ran")
            # The harness's own look at the page, before anything is closed: the tab the
            # agent ended on, or the harness's page when the agent closed its own.
            final_page = _final_page(tools, page, context)
            final_obs = await self._observe(final_page) if final_page else None
            row["observation"] = {"entry": entry_obs, "final": final_obs, "probes": probes}
            if final_obs is not None:
                answer = tools.trajectory.answers[-1].value if tools.trajectory.answers else None
                probes += await self._probes(browser, task, row, "after", final_obs, answer)
            if final_obs is None:
                row.update(
                    run_status="env_failure",
                    env_failure=EnvFailure.ORACLE_UNAVAILABLE.value,
                    error=(error or "") + " | final observation failed",
                )
            elif status != "answered" and tools.trajectory.site_errors:
                row.update(
                    run_status="env_failure",
                    env_failure=_site_failure(tools.trajectory.site_errors).value,
                    error="; ".join(tools.trajectory.site_errors[:3]),
                )
            await self._artifacts(context, final_page, row, task, state, tools)
        except PlaywrightError as e:
            crashed = (
                state.closed.is_set()
                or state.browser is None
                or not state.browser.is_connected()
                or (context is not None and not self._alive(context))
            )
            row.update(
                run_status="env_failure",
                env_failure=(
                    EnvFailure.BROWSER_CRASH if crashed else EnvFailure.HARNESS_ERROR
                ).value,
                error=str(e).splitlines()[0],
            )
        except Exception as e:  # a harness bug must not be blamed on the agent
            row.update(
                run_status="env_failure",
                env_failure=EnvFailure.HARNESS_ERROR.value,
                error=f"{type(e).__name__}: {e}",
            )
        finally:
            if tools is not None:
                # What an adapter kept of its agent (stdout, stderr, settings), whatever
                # happened to the run: stored, never trusted.
                try:
                    self._put_outputs(row, task, outputs_of(agent, tools))
                except Exception as e:  # noqa: BLE001 - must not hide the run's own outcome
                    row.setdefault("artifact_errors", {})["adapter_outputs"] = str(e)
            if context is not None:
                try:
                    await asyncio.wait_for(context.close(), self.settings.cleanup_timeout_s)
                except Exception as e:  # noqa: BLE001 - cleanup must never raise
                    row["cleanup_error"] = f"{type(e).__name__}: {e}"
            if guard is not None:
                await guard.stop()
            if own_dir is not None:
                shutil.rmtree(own_dir, ignore_errors=True)
        await self._world_events(row)
        return self._finish(row, task, state, tools)

    def _probe_plan(self, task: dict, when: str, final_obs: dict | None, answer: Any) -> list[str]:
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
            if when == "after" and _same_url((final_obs or {}).get("url"), url):
                continue  # the final observation already is that page at the end
            if url not in urls:
                urls.append(url)
        return urls

    async def _sample_during(
        self, browser: Browser, task: dict, row: dict, probes: list[dict], done: asyncio.Event
    ) -> None:
        """Every `during_every_s` seconds of the agent's run, up to `during_max` times, the
        task's "during" probes, appended to `probes`; stops when `done` is set."""
        if not self._probe_plan(task, "during", None, None):
            return
        for _ in range(self.settings.during_max):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), self.settings.during_every_s)
            if done.is_set():
                return
            probes += await self._probes(browser, task, row, "during")

    async def _probes(
        self,
        browser: Browser,
        task: dict,
        row: dict,
        when: str,
        final_obs: dict | None = None,
        answer: Any = None,
    ) -> list[dict]:
        """Pages observed by the harness in a context of its own (its own world scope, so a
        probe never counts against the run): with the entry and final observations they
        bracket the run, and an answer that matches any state seen in that window is right.
        A failed probe is recorded, never fatal."""
        out: list[dict] = []
        for url in self._probe_plan(task, when, final_obs, answer):
            probe: dict[str, Any] = {"url": url, "when": when}
            # Seen as the run's reader sees it (same device, geo, consent modal), but never
            # throttled: a probe is the harness's look, not part of the run.
            profile = row.get("_profile")
            kwargs = self.options.context_kwargs()
            kwargs.update(profile.context_kwargs() if profile else {})
            headers = {
                **self.options.routing.browser_headers(f"{self._scope(row)}.probe"),
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
                    slot = await self._probe_slot(browser, kwargs)
                    await slot[1].set_extra_http_headers(headers)
                page = slot[1]
                await self._pace(origin_of(url), harness is not None)
                await page.goto(url, wait_until="domcontentloaded", timeout=PROBE_TIMEOUT_MS)
                probe["obs"] = await asyncio.wait_for(
                    observe(page), self.settings.observe_timeout_s
                )
            except (PlaywrightError, TimeoutError) as e:
                probe["error"] = str(e).splitlines()[0] if str(e) else "timeout"
                slot = await self._drop_slot(slot)
            finally:
                if slot is not None and harness is not None:
                    await self._drop_slot(slot)
                elif slot is not None:
                    await self._release_slot(kwargs, slot, url)
            out.append(probe)
        return out

    # A new page costs a renderer start (~100 ms, measured): probes reuse pages, one pool per
    # context configuration. Each page never uses the HTTP cache (a probe must see the page as
    # served now) and is wiped (cookies, the probed origin's storage) and parked on
    # about:blank between uses, so no probe sees another's state.
    async def _probe_slot(self, browser: Browser, kwargs: dict) -> tuple:
        free = self._probe_pool.setdefault(json.dumps(kwargs, sort_keys=True), [])
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

    async def _release_slot(self, kwargs: dict, slot: tuple, url: str) -> None:
        context, page, session = slot
        try:
            await context.clear_cookies()
            await session.send(
                "Storage.clearDataForOrigin", {"origin": origin_of(url), "storageTypes": "all"}
            )
            await page.goto("about:blank")
        except PlaywrightError:
            await self._drop_slot(slot)
            return
        self._probe_pool.setdefault(json.dumps(kwargs, sort_keys=True), []).append(slot)

    async def _drop_slot(self, slot: tuple | None) -> None:
        if slot is not None:
            with contextlib.suppress(Exception):  # cleanup must never raise
                await asyncio.wait_for(slot[0].close(), self.settings.cleanup_timeout_s)
        return None

    @staticmethod
    def _scope(row: dict) -> str:
        """This execution of the run, as the world sees it: the run id repeats on a re-run,
        the nonce does not, so the world's log never mixes two executions."""
        return row.setdefault("_scope", f"{row['run_id']}.{uuid.uuid4().hex[:8]}")

    async def _world_events(self, row: dict) -> None:
        """What the run changed and leaked, as the world's own server recorded it (after
        cleanup, so nothing is still in flight). Kept under observation.world_events."""
        template = self.options.routing.events_url
        if not template or row.get("replay"):
            return  # a replayed run touched no world: its requests are in the replay log
        url = template.format(scope=self._scope(row))
        obs = row["observation"] = row.get("observation") or {}
        obs["world_scope"] = self._scope(row)
        try:
            async with httpx.AsyncClient(trust_env=False, timeout=5) as client:
                response = await client.get(url)
                response.raise_for_status()
                obs["world_events"] = response.json()["events"]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as e:
            obs["world_events_error"] = f"{type(e).__name__}: {e}"

    async def _drive(
        self, agent: Agent, task: dict, tools: BrowserTools, budget: float, state: _RunState
    ) -> tuple[str, str | None]:
        """Run the agent under its time budget; a stuck agent is cancelled, by design, and so
        is one whose browser died under it (no point waiting out its budget)."""
        work = asyncio.ensure_future(agent.run(AgentTask.from_task(task), tools))
        closed = asyncio.ensure_future(state.closed.wait())
        try:
            await asyncio.wait({work, closed}, timeout=budget, return_when="FIRST_COMPLETED")
        finally:
            closed.cancel()
            if not work.done():
                work.cancel()
                # Let the adapter clean up (kill its subprocess), but never hang on it.
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(work, self.settings.cleanup_timeout_s)
        if not work.done() or work.cancelled():
            if state.closed.is_set():
                raise PlaywrightError("browser closed or crashed while the agent ran")
            return (
                "answered" if tools.trajectory.answers else "timeout",
                f"agent exceeded its {budget:g}s budget and was stopped",
            )
        try:
            work.result()
        except BudgetExceeded as e:
            return ("answered" if tools.trajectory.answers else "budget_exceeded", str(e))
        except ModelEndpointError as e:
            # The provider is infrastructure: unreachable or refusing is not the agent's
            # failure; a request it rejected (too long a context) is.
            if tools.trajectory.answers:
                return "answered", str(e)
            return ("model_unavailable" if e.environmental else "agent_error"), str(e)
        except PlaywrightError as e:
            if state.closed.is_set() or state.browser is None or not state.browser.is_connected():
                raise  # the browser died under the agent: the environment's failure
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            return "agent_error", f"agent raised a browser error: {first}"
        except Exception as e:  # noqa: BLE001 - an agent crash is the agent's failure
            return "agent_error", f"{type(e).__name__}: {e}"
        return ("answered" if tools.trajectory.answers else "no_answer"), None

    async def _load_entry(
        self, page: Page, task: dict, state: _RunState
    ) -> tuple[EnvFailure, str] | None:
        url = task["entry_url"]
        if state.recording is not None:
            return await self._load_replayed_entry(page, task, state)
        if not self.robots.reachable(origin_of(url)):
            # No robots.txt answer means we may not fetch anything there: the site is down
            # (or, on the embedded default, the newsroom was never started).
            if not self._fixture_up():
                kind = EnvFailure.FIXTURE_NOT_STARTED
            elif not self.options.routing.proxy and not _resolves(url):
                kind = EnvFailure.DNS
            else:
                kind = EnvFailure.SITE_DOWN
            return kind, f"robots.txt of {origin_of(url)} unreachable"
        resp, msg = await self._goto_entry(page, url)
        if msg is not None:
            if failure := _entry_refused(url, msg):
                return failure
            kind = _site_failure([msg])
            if kind is EnvFailure.SITE_DOWN and not self._fixture_up():
                kind = EnvFailure.FIXTURE_NOT_STARTED
            return kind, f"entry {url}: {msg}"
        if resp is not None and resp.status >= 500:
            return EnvFailure.SITE_DOWN, f"entry {url}: HTTP {resp.status}"
        if resp is not None and resp.status >= 400:
            return EnvFailure.ENTRY_UNAVAILABLE, f"entry {url}: HTTP {resp.status}"
        return None

    async def _goto_entry(self, page: Page, url: str):
        """The entry page's response, or the first line of the navigation's error."""
        try:
            resp = await page.goto(
                url, wait_until="domcontentloaded", timeout=self.settings.entry_timeout_s * 1000
            )
        except PlaywrightError as e:
            return None, str(e).splitlines()[0]
        return resp, None

    async def _load_replayed_entry(
        self, page: Page, task: dict, state: _RunState
    ) -> tuple[EnvFailure, str] | None:
        """The entry page from the recording; one the recording does not hold is a gap in
        the recording (the environment), not something the agent could have done better."""
        url = task["entry_url"]
        where = state.recording.path.name
        resp, msg = await self._goto_entry(page, url)
        if msg is not None:
            return _entry_refused(url, msg) or (
                EnvFailure.REPLAY_GAP,
                f"entry {url} is not in {where}: {msg}",
            )
        entry = next(
            (e for e in state.replay.log if e["type"] == "document" and e["url"] == url), None
        )
        if entry is not None and entry["tag"] == "miss":
            return EnvFailure.REPLAY_GAP, f"entry {url} is not in {where}"
        if resp is not None and resp.status >= 400:
            return EnvFailure.ENTRY_UNAVAILABLE, f"entry {url}: recorded HTTP {resp.status}"
        return None

    def _recording(self, task: dict) -> Recording | None:
        """The recording a task names instead of the live site (None: a live task)."""
        spec = task.get("replay")
        if not spec:
            return None
        base = Path(self.settings.base_dir or ".")
        rules = tuple(str(recording_path(r, base)) for r in spec.get("rules") or ())
        return Recording.open(recording_path(spec["recording"], base), rules)

    def _robots(self, task: dict) -> RobotsRules:
        """robots.txt as the run's world serves it: the recording's, for a replayed task."""
        recording = self._recording(task) if isinstance(task, dict) else None
        return recording.robots_rules() if recording is not None else self.robots

    def _fixture_up(self) -> bool:
        """Whether the local world the routing points at (its proxy) accepts connections;
        True when there is none (the real web)."""
        proxy = self.options.routing.proxy
        if not proxy:
            return True
        parts = httpx.URL(proxy)
        try:
            with socket.create_connection((parts.host, parts.port or 80), timeout=2):
                return True
        except OSError:
            return False

    async def _observe(self, page: Page) -> dict | None:
        try:
            return await asyncio.wait_for(observe(page), self.settings.observe_timeout_s)
        except (PlaywrightError, TimeoutError):
            return None

    # -- lifecycle helpers ---------------------------------------------------------------------
    def _profile(self, task: dict):
        return self.profiles.resolve(
            task["constraints"], task["seed"], randomize=self.settings.randomize_profiles
        )

    async def _cdp_browser(
        self, pw, context_kwargs: dict, offline: bool = False
    ) -> tuple[BrowserContext, CdpGuard, str]:
        port = _free_port()
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

    @staticmethod
    def _alive(context: BrowserContext) -> bool:
        browser = context.browser
        return browser is None or browser.is_connected()

    def _key(self, task: dict, row: dict, name: str) -> str:
        return f"runs/{task['site']}/{row['day']}/{row['run_id']}/{name}"

    def _put_outputs(self, row: dict, task: dict, outputs: dict) -> None:
        for name, value in (outputs or {}).items():
            if isinstance(value, bytes):
                row["artifacts"][name] = self.store.put(self._key(task, row, name), value)
            elif isinstance(value, str):
                row["artifacts"][name] = self.store.put(self._key(task, row, name), value.encode())
            else:
                row.setdefault("adapter", {})[name] = value

    async def _artifacts(
        self,
        context: BrowserContext,
        page: Page | None,
        row: dict,
        task: dict,
        state: _RunState,
        tools: BrowserTools | None,
    ) -> None:
        """What the run leaves behind besides its row, captured before cleanup; a failed
        capture is noted, never fatal."""
        keep, art = self.settings.keeps, row["artifacts"]
        failed: dict[str, str] = {}
        if page is not None and not page.is_closed() and keep("screenshot"):
            try:
                png = await page.screenshot(type="png", timeout=5_000)
                art["screenshot"] = self.store.put(self._key(task, row, "final.png"), png)
            except PlaywrightError as e:
                failed["screenshot"] = str(e).splitlines()[0]
        if page is not None and not page.is_closed() and keep("a11y"):
            try:
                snap = await page.locator("body").aria_snapshot(timeout=5_000)
                art["a11y"] = self.store.put(
                    self._key(task, row, "a11y.yaml"), snap[:A11Y_MAX_CHARS].encode()
                )
            except PlaywrightError as e:
                failed["a11y"] = str(e).splitlines()[0]
        if keep("dom") and tools is not None and tools.dom_slices:
            art["dom"] = [
                self.store.put(
                    self._key(task, row, f"dom/{i:03d}-{s['tool']}.html"), s["html"].encode()
                )
                for i, s in enumerate(tools.dom_slices)
            ]
        if keep("har"):
            entries = sorted(state.har.values(), key=lambda h: h["start_ms"])
            art["har"] = self.store.put_json(self._key(task, row, "har.json"), entries)
        if keep("console") and state.console_errors:
            art["console"] = self.store.put_json(
                self._key(task, row, "console.json"), state.console_errors
            )
        if keep("trace"):
            fd, path = tempfile.mkstemp(suffix=".zip", prefix="newsbench-trace-")
            os.close(fd)
            try:
                await asyncio.wait_for(context.tracing.stop(path=path), 20)
                with open(path, "rb") as f:
                    art["trace"] = self.store.put(self._key(task, row, "trace.zip"), f.read())
            except (PlaywrightError, TimeoutError) as e:
                failed["trace"] = str(e).splitlines()[0] if str(e) else "timeout"
            finally:
                os.unlink(path)
        if failed:
            row["artifact_errors"] = failed

    def _guard(self, task: dict, state: _RunState):
        allowed = set(task["allowed_origins"])
        robots = state.recording.robots_rules() if state.recording else self.robots

        async def handle(route: Route) -> None:
            request = route.request
            url = request.url
            if not url.startswith(("http://", "https://")):
                await route.continue_()
                return
            origin = origin_of(url)
            on_list = origin in allowed
            robots_ok = robots.allows(url) if on_list else True
            if on_list and state.recording is not None and not state.recording.holds(url):
                robots_ok = True  # no such host in the recording: the replay answers a miss
            if on_list and robots_ok:
                state.requests.append(
                    RequestRecord(
                        url, origin, True, True, True, None, actor="agent", method=request.method
                    )
                )
                if request.resource_type == "document":
                    # A recording has no rate limit to respect.
                    waited = await self._pace(origin, state.replay is not None)
                    if waited > 0.05:
                        state.lifecycle.append({"kind": "paced", "origin": origin, "s": waited})
                state.har[request] = {
                    "url": url,
                    "method": request.method,
                    "type": request.resource_type,
                    "start_ms": round((time.perf_counter() - state.t0) * 1000, 1),
                    "wall": round(time.time(), 3),
                    "status": None,
                    "bytes": 0,
                    "duration_ms": None,
                }
                if state.replay is not None:
                    await state.replay.answer(route)  # from the recording, never the network
                elif self.settings.record is not None and self._capture_client is not None:
                    await capture(route, self.settings.record, self._capture_client)
                else:
                    await route.continue_()
                return
            if not on_list:
                reason = "off_allowlist"
            elif not robots.reachable(origin):
                reason = "robots_unreachable"  # the site's fault, not the agent's
            else:
                reason = "robots_disallowed"
            # A navigation is the agent's doing; a blocked sub-resource (a third-party script
            # the page itself pulls in) is logged but is not held against the agent.
            nav = request.is_navigation_request()
            actor = "agent" if nav and reason != "robots_unreachable" else "page"
            state.requests.append(
                RequestRecord(
                    url,
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
            state.har[request] = {
                "url": url,
                "method": request.method,
                "type": request.resource_type,
                "start_ms": round((time.perf_counter() - state.t0) * 1000, 1),
                "status": None,
                "bytes": 0,
                "duration_ms": 0.0,
                "blocked": reason,
            }
            if actor == "agent":
                state.safety_events.append({"kind": reason, "url": url})
            await route.abort("blockedbyclient")

        return handle

    async def _pace(self, origin: str, replayed: bool = False) -> float:
        """Wait for this origin's turn across the whole pool (site rate limit, robots.txt
        Crawl-delay); returns the seconds waited."""
        if replayed or not self.settings.pace:
            return 0.0
        gap = max(self.settings.min_interval.get(origin, 0.0), self.robots.crawl_delay(origin))
        if gap <= 0:
            return 0.0
        lock = self._pace_locks.setdefault(origin, asyncio.Lock())
        async with lock:
            wait = self._last_load.get(origin, -1e9) + gap - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._last_load[origin] = time.monotonic()
        return max(wait, 0.0)

    def _listen(
        self, context: BrowserContext, state: _RunState, allowed: set[str], profile
    ) -> None:
        def on_request(req: Request) -> None:
            # Redirect hops are not offered to route handlers: account for them here, so a
            # redirect off the allowlist is on the record even though the guard never saw it.
            if req.redirected_from is not None and origin_of(req.url) not in allowed:
                state.requests.append(
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
                state.safety_events.append({"kind": "off_allowlist_redirect", "url": req.url})

        def on_response(resp) -> None:
            size = int(resp.headers.get("content-length") or 0)
            if entry := state.har.get(resp.request):
                entry["status"] = resp.status
                entry["bytes"] = size
                on_done(resp.request)
            for rec in reversed(state.requests):
                if rec.url == resp.url and rec.fetched and rec.status is None:
                    rec.status = resp.status
                    rec.bytes = size
                    break

        # Duration is to the response's headers (or the failure): one event per request
        # fewer than waiting for requestfinished, which the accounting does not need.
        def on_done(req: Request) -> None:
            if (entry := state.har.get(req)) and entry["duration_ms"] is None:
                now = (time.perf_counter() - state.t0) * 1000
                entry["duration_ms"] = round(now - entry["start_ms"], 1)

        def on_failed(req: Request) -> None:
            on_done(req)
            if (entry := state.har.get(req)) is not None and "blocked" not in entry:
                entry["error"] = req.failure or "failed"
            for rec in reversed(state.requests):
                if rec.url == req.url and rec.fetched and rec.status is None and not rec.error:
                    rec.error = req.failure or "failed"
                    break

        async def on_page(page: Page) -> None:
            # A tab the agent or the site opens is throttled like the first.
            with contextlib.suppress(PlaywrightError):
                await profile.apply(page)

        context.on("request", on_request)
        context.on("response", on_response)
        context.on("requestfailed", on_failed)
        context.on("page", on_page)
        context.on("console", lambda m: m.type == "error" and state.console_errors.append(m.text))
        context.on("weberror", lambda e: state.console_errors.append(f"pageerror: {e.error}"))

    def _environment(self, browser: Browser, task: dict, agent: Agent, profile) -> dict:
        manifest = agent.manifest
        return {
            "browser": "chromium",
            "browser_version": browser.version,
            **profile.manifest(),
            "agent_adapter": manifest.adapter,
            "agent_version": manifest.agent_version,
            "agent_settings": settings_of(agent),
            "model": manifest.model,
            "prompt_hash": manifest.prompt_hash,
            "manifest_hash": manifest.content_hash,
            "task_seed": task["seed"],
            "task_set": self.settings.task_set,
            "world": self.world,
            "packages": _package_versions(),
            "platform": f"{platform.system()} {platform.machine()}",
            "argv0": sys.argv[0],
        }

    def _finish(
        self,
        row: dict,
        task: Any,
        state: _RunState | None = None,
        tools: BrowserTools | None = None,
    ) -> dict:
        row["ended_at"] = datetime.now(UTC)
        row.pop("_scope", None)  # kept in environment / observation, not a column
        row.pop("_profile", None)
        row.pop("_replay", None)
        if state is not None and state.replay is not None:
            # The replay log (agent's and harness's requests, tagged) and its coverage: what
            # the next recording should add.
            row["replay"]["coverage"] = state.replay.coverage()
            row["replay"]["agent_misses"] = len(state.replay.agent_misses())
            if isinstance(task, dict) and task.get("site"):
                row["artifacts"]["replay_log"] = self.store.put(
                    self._key(task, row, "replay.jsonl"),
                    "".join(json.dumps(e) + "\n" for e in state.replay.log).encode(),
                )
        if state is not None:
            row["request_log"] = [r.as_dict() for r in state.requests]
            row["requests"] = len(state.requests)
            row["bytes"] = sum(r.bytes for r in state.requests)
            row["safety_events"] = state.safety_events
            row["console_errors"] = state.console_errors[:50]
            loads = sorted(
                e["duration_ms"]
                for e in state.har.values()
                if e["type"] == "document" and e["duration_ms"] and not e.get("blocked")
            )
            row["page_load_ms"] = loads[len(loads) // 2] if loads else None
            if state.lifecycle:
                row["lifecycle"] = state.lifecycle
        if tools is not None:
            traj = tools.trajectory
            row["steps"] = tools.steps
            row["tokens"] = traj.tokens
            row["trajectory"] = traj.steps
            row["answers"] = [
                {"value": a.value, "seconds": a.seconds, "claims_success": a.claims_success}
                for a in traj.answers
            ]
            if traj.answers:
                last = traj.answers[-1]
                row["answer"] = last.value
                row["answer_seconds"] = last.seconds
                row["self_reported_success"] = last.claims_success
        row.setdefault("environment", {})
        if isinstance(task, dict) and task.get("site"):
            if self.settings.keeps("spans") and tools is not None:
                # Wall clock at the agent's t=0 (the tools keep a perf_counter origin).
                t0_ns = time.time_ns() - round(tools.elapsed() * 1e9)
                endpoint, headers = self._otlp
                telemetry = export_run_spans(
                    row,
                    t0_ns,
                    endpoint=endpoint,
                    headers=headers,
                    file_writer=lambda data: self.store.put(
                        self._key(task, row, "spans.jsonl"), data
                    ),
                    timeout_s=1.0,  # a collector that is down costs the pool at most this
                )
                row["environment"]["telemetry"] = telemetry
                if telemetry.get("exported") == "file":
                    row["artifacts"]["spans"] = telemetry["uri"]
            # Written as soon as the run ends, so a crash later in the batch loses nothing.
            # With the task it ran (oracle included: run.json is the harness's, never shown to
            # an agent), so a failing run can become a regression task exactly.
            row["artifacts"]["run"] = self.store.put_json(
                self._key(task, row, "run.json"), {**row, "artifacts": None, "task": task}
            )
        return row


async def _target_id(context: BrowserContext, page: Page) -> str:
    session = await context.new_cdp_session(page)
    try:
        info = await session.send("Target.getTargetInfo")
    finally:
        await session.detach()
    return info["targetInfo"]["targetId"]


def _final_page(tools: BrowserTools, page: Page, context: BrowserContext) -> Page | None:
    """The page the harness observes at the end: the agent's active tab, else the harness's
    own, else the last tab still open."""
    for candidate in (tools.page, page, *reversed(context.pages)):
        if candidate is not None and not candidate.is_closed():
            return candidate
    return None


def _entry_refused(url: str, msg: str) -> tuple[EnvFailure, str] | None:
    """An entry navigation that timed out or that the guard refused (live or replayed)."""
    if "Timeout" in msg:
        return EnvFailure.NAVIGATION_TIMEOUT, f"entry {url}: {msg}"
    if "ERR_BLOCKED_BY_CLIENT" in msg:
        return EnvFailure.ENTRY_UNAVAILABLE, f"entry {url} is not allowed: {msg}"
    return None


def _site_failure(errors: Sequence[str]) -> EnvFailure:
    text = " ".join(errors)
    if "ERR_NAME_NOT_RESOLVED" in text:
        return EnvFailure.DNS
    if "ERR_PROXY_CONNECTION_FAILED" in text or "ERR_TUNNEL_CONNECTION_FAILED" in text:
        return EnvFailure.FIXTURE_NOT_STARTED
    if "Timeout" in text or "ERR_TIMED_OUT" in text:
        return EnvFailure.NAVIGATION_TIMEOUT
    return EnvFailure.SITE_DOWN


def _resolves(url: str) -> bool:
    host = httpx.URL(url).host
    try:
        socket.getaddrinfo(host, None)
    except OSError:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_tasks(
    tasks: Sequence[dict], day: date, runner: Runner, progress: Callable[[dict], None] | None = None
) -> list[dict]:
    """Synchronous entry point for callers outside an event loop (assets, the CLI)."""
    return asyncio.run(runner.run(tasks, day, progress))
