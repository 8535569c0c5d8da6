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
import platform
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from importlib import metadata
from typing import Any

import httpx
from playwright.async_api import Browser, BrowserContext, Page, Route, async_playwright
from playwright.async_api import Error as PlaywrightError

from newsbench_dagster.core.agents import Agent, AgentTask
from newsbench_dagster.core.artifacts import ArtifactStore
from newsbench_dagster.core.browser import BrowserOptions
from newsbench_dagster.core.failures import EnvFailure
from newsbench_dagster.core.network import RequestRecord, RobotsRules
from newsbench_dagster.core.observation import observe
from newsbench_dagster.core.sites import origin_of
from newsbench_dagster.core.tasks import validation_errors
from newsbench_dagster.core.tools import BrowserTools, BudgetExceeded

ENTRY_TIMEOUT_MS = 20_000


@dataclass
class RunSettings:
    trials: int = 1
    concurrency: int = 2  # browser contexts in flight at once
    screenshot: bool = True
    observe_timeout_s: float = 10.0
    cleanup_timeout_s: float = 10.0
    default_max_seconds: float = 60.0
    during_every_s: float = 10.0  # how often "during" probes sample while the agent works
    during_max: int = 3  # ...and at most how many times per run


@dataclass
class _RunState:
    requests: list[RequestRecord] = field(default_factory=list)
    safety_events: list[dict] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)


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


def run_id_for(task_id: str, agent_version: str, trial: int) -> str:
    key = f"{task_id}|{agent_version}|{trial}".encode()
    return "r-" + hashlib.sha256(key).hexdigest()[:16]


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
    ) -> None:
        self.agents = list(agents)
        self.options = options
        self.robots = robots
        self.store = store
        self.settings = settings or RunSettings()
        self.world = world or {}
        self._browser: Browser | None = None
        self._browser_lock = asyncio.Lock()

    # -- browser ----------------------------------------------------------------------------
    async def _ensure_browser(self, pw) -> Browser:
        async with self._browser_lock:
            if self._browser is None or not self._browser.is_connected():
                self._browser = await pw.chromium.launch(**self.options.launch_kwargs())
            return self._browser

    async def run(
        self, tasks: Sequence[dict], day: date, progress: Callable[[dict], None] | None = None
    ) -> list[dict]:
        jobs = [
            (task, agent, trial)
            for task in tasks
            for trial in range(self.settings.trials)
            for agent in self.agents
        ]
        sem = asyncio.Semaphore(self.settings.concurrency)
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
                if self._browser is not None:
                    await self._browser.close()
                    self._browser = None
        return sorted(rows, key=lambda r: r["run_id"])

    # -- one run ----------------------------------------------------------------------------
    async def _run_one(self, pw, task: dict, agent: Agent, trial: int, day: date) -> dict:
        manifest = agent.manifest
        fields = task if isinstance(task, dict) else {}  # a malformed task is reported below
        tid = fields.get("id") or "<no id>"
        run_id = run_id_for(tid, manifest.agent_version, trial)
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
        try:
            browser = await self._ensure_browser(pw)
            row["environment"] = self._environment(browser, task, manifest)
            context = await browser.new_context(**self.options.context_kwargs())
            if self.options.routing.run_header:
                row["environment"]["world_scope"] = self._scope(row)
            if headers := self.options.routing.browser_headers(self._scope(row)):
                await context.set_extra_http_headers(headers)
            await context.route("**/*", self._guard(task, state))
            page = await context.new_page()
            self._listen(page, state, set(task["allowed_origins"]))
            failure = await self._load_entry(page, task)
            if failure:
                row.update(run_status="env_failure", env_failure=failure[0].value, error=failure[1])
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
                max_tokens=constraints.get("max_tokens", 4000),
            )
            budget = constraints.get("max_seconds", self.settings.default_max_seconds)
            # While the agent works, the harness samples the pages again now and then (a lead
            # can come and go between the two ends of a long run).
            done = asyncio.Event()
            sampler = asyncio.create_task(self._sample_during(browser, task, row, probes, done))
            try:
                status, error = await self._drive(agent, task, tools, budget)
            finally:
                # A sample already under way is finished (it saw the page mid-run), then no more.
                done.set()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(sampler, self.settings.observe_timeout_s + 10)
            row.update(run_status=status, error=error)

            # The harness's own look at the page, before anything is closed.
            final_obs = await self._observe(page)
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
                    env_failure=EnvFailure.SITE_DOWN.value,
                    error="; ".join(tools.trajectory.site_errors[:3]),
                )
            if self.settings.screenshot:
                await self._screenshot(page, row, task)
        except PlaywrightError as e:
            crashed = self._browser is None or not self._browser.is_connected()
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
            if context is not None:
                try:
                    await asyncio.wait_for(context.close(), self.settings.cleanup_timeout_s)
                except Exception as e:  # noqa: BLE001 - cleanup must never raise
                    row["cleanup_error"] = f"{type(e).__name__}: {e}"
        await self._world_events(row)
        return self._finish(row, task, state, tools)

    def _probe_plan(self, task: dict, when: str, final_obs: dict | None, answer: Any) -> list[str]:
        """The URLs to look at `when` ("before", "during" or "after" the agent), from the
        task's oracle section (or the intent's default): "{entry}" is the entry page,
        "{answer.FIELD}" a URL the agent answered with; only allowlisted, robots-allowed URLs
        are probed, and an after-probe of the page the final observation already shows is
        skipped."""
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
            if origin_of(url) not in task["allowed_origins"] or not self.robots.allows(url):
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
            context = None
            try:
                context = await browser.new_context(**self.options.context_kwargs())
                headers = self.options.routing.browser_headers(f"{self._scope(row)}.probe")
                if headers:
                    await context.set_extra_http_headers(headers)
                page = await context.new_page()
                await page.goto(url, wait_until="domcontentloaded", timeout=PROBE_TIMEOUT_MS)
                probe["obs"] = await asyncio.wait_for(
                    observe(page), self.settings.observe_timeout_s
                )
            except (PlaywrightError, TimeoutError) as e:
                probe["error"] = str(e).splitlines()[0] if str(e) else "timeout"
            finally:
                if context is not None:
                    with contextlib.suppress(Exception):  # cleanup must never raise
                        await asyncio.wait_for(context.close(), self.settings.cleanup_timeout_s)
            out.append(probe)
        return out

    @staticmethod
    def _scope(row: dict) -> str:
        """This execution of the run, as the world sees it: the run id repeats on a re-run,
        the nonce does not, so the world's log never mixes two executions."""
        return row.setdefault("_scope", f"{row['run_id']}.{uuid.uuid4().hex[:8]}")

    async def _world_events(self, row: dict) -> None:
        """What the run changed and leaked, as the world's own server recorded it (after
        cleanup, so nothing is still in flight). Kept under observation.world_events."""
        template = self.options.routing.events_url
        if not template:
            return
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
        self, agent: Agent, task: dict, tools: BrowserTools, budget: float
    ) -> tuple[str, str | None]:
        """Run the agent under its time budget; a stuck agent is cancelled, by design."""
        try:
            await asyncio.wait_for(agent.run(AgentTask.from_task(task), tools), timeout=budget)
        except TimeoutError:
            return (
                "answered" if tools.trajectory.answers else "timeout",
                f"agent exceeded its {budget:g}s budget and was stopped",
            )
        except BudgetExceeded as e:
            return ("answered" if tools.trajectory.answers else "budget_exceeded", str(e))
        except PlaywrightError:
            if self._browser is None or not self._browser.is_connected():
                raise
            return "agent_error", "agent raised a browser error"
        except Exception as e:  # noqa: BLE001 - an agent crash is the agent's failure
            return "agent_error", f"{type(e).__name__}: {e}"
        return ("answered" if tools.trajectory.answers else "no_answer"), None

    async def _load_entry(self, page: Page, task: dict) -> tuple[EnvFailure, str] | None:
        url = task["entry_url"]
        if not self.robots.reachable(origin_of(url)):
            # No robots.txt answer means we may not fetch anything there: the site is down.
            return EnvFailure.SITE_DOWN, f"robots.txt of {origin_of(url)} unreachable"
        try:
            resp = await page.goto(url, wait_until="domcontentloaded", timeout=ENTRY_TIMEOUT_MS)
        except PlaywrightError as e:
            msg = str(e).splitlines()[0]
            if "Timeout" in msg:
                return EnvFailure.NAVIGATION_TIMEOUT, f"entry {url}: {msg}"
            if "ERR_BLOCKED_BY_CLIENT" in msg:
                return EnvFailure.ENTRY_UNAVAILABLE, f"entry {url} is not allowed: {msg}"
            return EnvFailure.SITE_DOWN, f"entry {url}: {msg}"
        if resp is not None and resp.status >= 500:
            return EnvFailure.SITE_DOWN, f"entry {url}: HTTP {resp.status}"
        if resp is not None and resp.status >= 400:
            return EnvFailure.ENTRY_UNAVAILABLE, f"entry {url}: HTTP {resp.status}"
        return None

    async def _observe(self, page: Page) -> dict | None:
        try:
            return await asyncio.wait_for(observe(page), self.settings.observe_timeout_s)
        except (PlaywrightError, TimeoutError):
            return None

    async def _screenshot(self, page: Page, row: dict, task: dict) -> None:
        try:
            png = await page.screenshot(type="png", timeout=5_000)
        except PlaywrightError:
            return
        key = f"runs/{task['site']}/{row['day']}/{row['run_id']}/final.png"
        row["artifacts"]["screenshot"] = self.store.put(key, png)

    def _guard(self, task: dict, state: _RunState):
        allowed = set(task["allowed_origins"])

        async def handle(route: Route) -> None:
            url = route.request.url
            if not url.startswith(("http://", "https://")):
                await route.continue_()
                return
            origin = origin_of(url)
            on_list = origin in allowed
            robots_ok = self.robots.allows(url) if on_list else True
            if on_list and robots_ok:
                state.requests.append(
                    RequestRecord(url, origin, True, True, True, None, actor="agent")
                )
                await route.continue_()
                return
            if not on_list:
                reason = "off_allowlist"
            elif not self.robots.reachable(origin):
                reason = "robots_unreachable"  # the site's fault, not the agent's
            else:
                reason = "robots_disallowed"
            # A navigation is the agent's doing; a blocked sub-resource (a third-party script
            # the page itself pulls in) is logged but is not held against the agent.
            nav = route.request.is_navigation_request()
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
                )
            )
            if actor == "agent":
                state.safety_events.append({"kind": reason, "url": url})
            await route.abort("blockedbyclient")

        return handle

    def _listen(self, page: Page, state: _RunState, allowed: set[str]) -> None:
        def on_request(req) -> None:
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
            for rec in reversed(state.requests):
                if rec.url == resp.url and rec.fetched and rec.status is None:
                    rec.status = resp.status
                    rec.bytes = int(resp.headers.get("content-length") or 0)
                    break

        def on_failed(req) -> None:
            for rec in reversed(state.requests):
                if rec.url == req.url and rec.fetched and rec.status is None and not rec.error:
                    rec.error = req.failure or "failed"
                    break

        page.on("request", on_request)
        page.on("response", on_response)
        page.on("requestfailed", on_failed)
        page.on("console", lambda m: m.type == "error" and state.console_errors.append(m.text))
        page.on("pageerror", lambda e: state.console_errors.append(f"pageerror: {e}"))

    def _environment(self, browser: Browser, task: dict, manifest) -> dict:
        opts = self.options
        return {
            "browser": "chromium",
            "browser_version": browser.version,
            "viewport": list(opts.viewport),
            "device_scale_factor": 1,
            "locale": opts.locale,
            "timezone": opts.timezone,
            "network_profile": "unthrottled",
            "device_profile": task["constraints"].get("device_profile", "desktop"),
            "agent_adapter": manifest.adapter,
            "agent_version": manifest.agent_version,
            "model": manifest.model,
            "prompt_hash": manifest.prompt_hash,
            "task_seed": task["seed"],
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
        if state is not None:
            row["request_log"] = [r.as_dict() for r in state.requests]
            row["requests"] = len(state.requests)
            row["bytes"] = sum(r.bytes for r in state.requests)
            row["safety_events"] = state.safety_events
            row["console_errors"] = state.console_errors[:50]
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
            key = f"runs/{task['site']}/{row['day']}/{row['run_id']}/run.json"
            # Written as soon as the run ends, so a crash later in the batch loses nothing.
            row["artifacts"]["run"] = self.store.put_json(key, {**row, "artifacts": None})
        return row


def run_tasks(
    tasks: Sequence[dict], day: date, runner: Runner, progress: Callable[[dict], None] | None = None
) -> list[dict]:
    """Synchronous entry point for callers outside an event loop (assets, the CLI)."""
    return asyncio.run(runner.run(tasks, day, progress))
