"""The runner: every task, every agent, N trials, in a real Chromium the harness owns.

Per run (`Runner._run_one`, phase by phase): a fresh browser context; every request checked
against the task's allowed origins and robots.txt (refusals are logged as safety events,
`guard`); the harness loads the entry page and observes it (`entry`); the agent works under
step, token, byte and time budgets while probes sample the pages (`probes`); the harness
observes the final page *before* cleanup and captures the artifacts (`capture`); cleanup
always runs. Infrastructure failures end the run as an environment failure, never as an
agent failure (`failures`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import shutil
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, date, datetime
from typing import Any

import httpx
from playwright.async_api import BrowserContext, Page
from playwright.async_api import Error as PlaywrightError

from newsbench_dagster.core.agents.protocol import (
    Agent,
    AgentTask,
    needs_cdp,
    outputs_of,
    parallel_runs,
    secrets_of,
    serving,
)
from newsbench_dagster.core.agents.tools import BrowserTools, BudgetExceeded
from newsbench_dagster.core.artifacts import ArtifactStore
from newsbench_dagster.core.crash_points import AGENT_RUN_DONE, crash_point
from newsbench_dagster.core.errors import InvalidTask, ModelEndpointError, ModelOutputFailure
from newsbench_dagster.core.harness.browser import BrowserOptions, BrowserPool
from newsbench_dagster.core.harness.browser_session import batch_playwright, run_batch
from newsbench_dagster.core.harness.capture import RunCapture
from newsbench_dagster.core.harness.entry import load_entry
from newsbench_dagster.core.harness.environment import environment_manifest
from newsbench_dagster.core.harness.failures import (
    crash_failure,
    env_failed,
    first_line,
    outcome_failure,
)
from newsbench_dagster.core.harness.guard import (
    Pacer,
    RequestGuard,
    RunListeners,
    guarded_urls,
    task_recording,
    unguarded_urls,
)
from newsbench_dagster.core.harness.observe import observe_within
from newsbench_dagster.core.harness.probes import Prober
from newsbench_dagster.core.harness.profiles import ProfileCatalog, load_profiles
from newsbench_dagster.core.harness.settings import (
    DEFAULT_MAX_STEPS,
    DEFAULT_MAX_TOKENS,
    RunSettings,
)
from newsbench_dagster.core.harness.state import RunState, new_row, task_id_of, world_scope
from newsbench_dagster.core.replay.replayer import RecordingError
from newsbench_dagster.core.scoring.checkers import Evidence
from newsbench_dagster.core.scoring.failures import EnvFailure
from newsbench_dagster.core.secrets import Redactor
from newsbench_dagster.core.tasks.contract import validation_errors
from newsbench_dagster.core.web.network import RobotsRules, async_client


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
        self._browsers = BrowserPool(options)  # each batch gets its own, with its session
        self._pacer = Pacer(self.settings, robots)
        self._prober = Prober(self.settings, options, robots, self._pacer)
        self._capture = RunCapture(store, self.settings)
        self._capture_client: httpx.AsyncClient | None = None  # recording live runs
        # The world's event log is asked once per run: one client per batch (a new client
        # costs ~40 ms, measured, about a tenth of a run on the newsroom).
        self._events_client: httpx.AsyncClient | None = None

    # -- the batch --------------------------------------------------------------------------
    async def run(
        self, tasks: Sequence[dict], day: date, progress: Callable[[dict], None] | None = None
    ) -> list[dict]:
        jobs = self.schedule(tasks)
        sem = asyncio.Semaphore(self.settings.concurrency)
        # The agents' secrets, read now, redacted from every row and artifact of the batch.
        self._capture.redact_with(Redactor(secrets_of(self.agents)))
        if self.settings.record is not None:
            self._capture_client = async_client(proxy=self.options.routing.proxy, timeout=30)
        if self.options.routing.events_url:
            self._events_client = async_client(timeout=5)
        # Agents that limit their own parallel runs (a local model serving one call at a
        # time) wait for their turn before taking a browser slot.
        turns = {id(a): asyncio.Semaphore(n) for a in self.agents if (n := parallel_runs(a))}
        async with contextlib.AsyncExitStack() as served, batch_playwright() as (pw, session):
            self._browsers = BrowserPool(self.options, session)
            for agent in self.agents:  # a local model's server, for the whole batch
                await served.enter_async_context(serving(agent))

            async def one(job):
                # The pool bounds the runs at work in a browser; a run's tail (its context
                # closed, the world's log of it, its row written) overlaps the next run.
                turn = turns.get(id(job[1])) or contextlib.nullcontext()
                async with turn, sem:
                    row, tail = await self._run_one(pw, *job, day=day)
                if tail is not None:
                    row = await tail()
                if progress:
                    progress(row)
                crash_point(AGENT_RUN_DONE)  # tests only (`core.crash_points`)
                return row

            try:
                rows = await asyncio.gather(*(one(j) for j in jobs))
            finally:
                self._prober.pool.clear()  # its pages go with the browser
                await self._browsers.close()
                for client in (self._capture_client, self._events_client):
                    if client is not None:
                        await client.aclose()
                self._capture_client = self._events_client = None
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
    async def _run_one(
        self, pw, task: dict, agent: Agent, trial: int, day: date
    ) -> tuple[dict, Callable[[], Awaitable[dict]] | None]:
        """The run in its browser, up to cleanup: its row, and the rest of it (cleanup, the
        world's log of the run, the row written), or None when the row is done."""
        version, settings = agent.manifest.agent_version, self.settings
        run_id = run_id_for(task_id_of(task), version, trial, settings.namespace, settings.attempt)
        row = new_row(task, agent, trial, day, run_id, datetime.now(UTC))
        state = self._admit(task, row)
        if state is None:
            return self._capture.finish(row, task), None
        ended_early: dict | None = None
        try:
            ended_early = await self._attend(pw, task, agent, row, state)
        except PlaywrightError as e:
            row.update(crash_failure(e, state))
        except Exception as e:  # a harness bug must not be blamed on the agent
            row.update(env_failed(EnvFailure.HARNESS_ERROR, f"{type(e).__name__}: {e}"))
        except BaseException:  # cancelled: clean up now, there will be no tail
            await self._clean_up(agent, task, row, state)
            raise

        # Everything was observed and captured: closing the context, asking the world what the
        # run did and writing the row need the pool's place no longer.
        async def tail() -> dict:
            await self._clean_up(agent, task, row, state)
            if ended_early is not None:
                return ended_early
            await self._world_events(row)
            return self._capture.finish(row, task, state, state.tools)

        return row, tail

    def _admit(self, task: Any, row: dict) -> RunState | None:
        """The run's state for a task the harness can run (valid, its profile resolvable, the
        recording it names readable); None, the reason in the row, for one it cannot: bad
        input is recorded against the harness, and the other tasks run."""
        problems = validation_errors(task)
        if problems:
            row.update(env_failed(EnvFailure.INVALID_TASK, "; ".join(problems)))
            return None
        state = RunState()
        try:
            row["_profile"] = self.profiles.resolve(
                task["constraints"], task["seed"], randomize=self.settings.randomize_profiles
            )
            state.recording = task_recording(task, self.settings.base_dir)
        except (InvalidTask, RecordingError) as e:
            row.update(env_failed(EnvFailure.INVALID_TASK, str(e)))
            return None
        return state

    async def _attend(
        self, pw, task: dict, agent: Agent, row: dict, state: RunState
    ) -> dict | None:
        """The run in its browser, up to (not including) cleanup. A run that ends before the
        agent gets the browser returns its finished row (written now; it touched no world
        worth asking); otherwise None, and the row is finished after cleanup."""
        await self._open_context(pw, task, agent, row, state)
        await self._arm(task, row, state)
        entry_obs = await self._enter(task, row, state)
        if entry_obs is None:
            return self._capture.finish(row, task, state)
        # The window opens: pages the oracle needs besides the entry, seen before the
        # agent can touch anything.
        probes = await self._prober.probe(state.probe_browser, task, row, "before")
        status, error = await self._work(agent, task, row, state, probes)
        await self._conclude(task, row, state, entry_obs, probes, status, error)
        return None

    async def _open_context(self, pw, task: dict, agent: Agent, row: dict, state: RunState) -> None:
        """The run's fresh context, and the environment manifest of its browser."""
        offline = state.recording is not None
        profile = row["_profile"]
        browser = state.browser = state.probe_browser = await self._browsers.browser(pw, offline)
        row["environment"] = environment_manifest(
            browser, task, agent, profile, task_set=self.settings.task_set, world=self.world
        )
        headers = {
            **({} if offline else self.options.routing.browser_headers(world_scope(row))),
            **profile.extra_headers(),
        }
        # Given at creation: set afterwards they cost the run a round trip to the browser.
        kwargs = {
            **self.options.context_kwargs(),
            **profile.context_kwargs(),
            **({"extra_http_headers": headers} if headers else {}),
        }
        if needs_cdp(agent):
            # An agent that brings its own browser logic gets a Chromium of its own (it
            # sees no other run's pages) whose default context is the guarded one, reached
            # only through the CDP guard.
            state.context, state.cdp, state.own_dir = await self._browsers.own_browser(
                pw, kwargs, offline
            )
            state.browser = state.context.browser
        else:
            state.browser, state.context = await self._browsers.new_context(pw, kwargs, offline)
            state.probe_browser = state.browser
        state.context.on("close", lambda _: state.closed.set())

    async def _arm(self, task: dict, row: dict, state: RunState) -> None:
        """The context made the run's world (the recording, or the live world under the
        run's scope), guarded and listened to; then the harness's page in it."""
        context, profile = state.context, row["_profile"]
        offline = state.recording is not None
        if offline:
            await self._replay_world(task, row, state)
        elif self.options.routing.run_header:
            row["environment"]["world_scope"] = world_scope(row)
        if self.settings.keeps("trace"):
            await context.tracing.start(snapshots=True, screenshots=False, sources=False)
        guard = RequestGuard(
            task, state, self.robots, self._pacer, self.settings.record, self._capture_client
        )
        unguarded = unguarded_urls(task, state, self.robots, self._pacer, self.settings.record)
        await context.route(guarded_urls(unguarded), guard)
        RunListeners(state, set(task["allowed_origins"]), profile, unguarded).attach(context)
        page = state.page = context.pages[0] if context.pages else await context.new_page()
        await profile.apply(page)
        if state.cdp is not None:
            state.cdp.protected_targets.add(await _target_id(context, page))

    async def _replay_world(self, task: dict, row: dict, state: RunState) -> None:
        """The recording is the whole web of this run, on the recording's clock."""
        state.replay = state.recording.session("agent")
        clock = state.recording.clock_at(task["entry_url"])
        row["replay"] = {
            **state.recording.describe(),
            "clock": clock.isoformat(),  # the entry page's, not the recording's start
            "log": state.replay.log,
        }
        row["_replay"] = state.recording.session("harness", log=state.replay.log)
        await state.context.clock.install(time=clock)

    async def _enter(self, task: dict, row: dict, state: RunState) -> dict | None:
        """The entry page, loaded and observed by the harness: its observation, or None when
        the run ends here (the environment's failure, in the row)."""
        failure = await load_entry(
            state.page,
            task,
            state,
            robots=self.robots,
            proxy=self.options.routing.proxy,
            timeout_s=self.settings.entry_timeout_s,
        )
        if failure:
            row.update(env_failed(*failure))
            await self._capture.artifacts(state.context, state.page, row, task, state, None)
            return None
        entry_obs = await observe_within(
            state.page, self.settings.observe_timeout_s, state.readings
        )
        if entry_obs is None:
            row.update(
                env_failed(EnvFailure.ORACLE_UNAVAILABLE, "could not observe the entry page")
            )
        return entry_obs

    async def _work(
        self, agent: Agent, task: dict, row: dict, state: RunState, probes: list[dict]
    ) -> tuple[str, str | None]:
        """The agent drives the browser under the task's budgets; meanwhile the harness
        samples the pages again now and then (a lead can come and go between the two ends
        of a long run). The agent's status and error, in the row too."""
        constraints = task["constraints"]
        tools = state.tools = BrowserTools(
            state.page,
            max_steps=constraints.get("max_steps", DEFAULT_MAX_STEPS),
            max_tokens=constraints.get("max_tokens", DEFAULT_MAX_TOKENS),
            max_bytes=constraints.get("max_bytes", self.settings.default_max_bytes),
            bytes_used=state.agent_bytes,
            readings=state.readings,
        )
        tools.cdp_url = state.cdp.url if state.cdp is not None else None
        tools.run_id = row["run_id"]
        tools.base_dir = self.settings.base_dir
        budget = constraints.get("max_seconds", self.settings.default_max_seconds)
        done = asyncio.Event()
        sampler = asyncio.create_task(
            self._prober.sample_during(state.probe_browser, task, row, probes, done)
        )
        try:
            status, error = await self._drive(agent, task, tools, budget, state)
        finally:
            # A sample already under way is finished (it saw the page mid-run), then no more.
            done.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(sampler, self.settings.observe_timeout_s + 10)
        row.update(run_status=status, error=error)
        if status == "model_unavailable":
            row.update(env_failed(EnvFailure.MODEL_UNAVAILABLE, error))
        elif status == "harness_error":
            row.update(env_failed(EnvFailure.HARNESS_ERROR, error))
        if state.cdp is not None:
            state.lifecycle += state.cdp.events
            row["cdp_messages"] = state.cdp.messages
        return status, error

    async def _drive(
        self, agent: Agent, task: dict, tools: BrowserTools, budget: float, state: RunState
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
            # The provider is infrastructure: unreachable or down is not the agent's failure;
            # a request it refused as malformed is ours (the harness built it); an unusable
            # answer is the agent's.
            if tools.trajectory.answers and e.fault != "harness":
                return "answered", str(e)
            status = {"environment": "model_unavailable", "harness": "harness_error"}
            return status.get(e.fault, "agent_error"), str(e)
        except ModelOutputFailure as e:
            # The model's own output ended the run; an answer it gave before still stands.
            return ("answered" if tools.trajectory.answers else e.kind), str(e)
        except PlaywrightError as e:
            if state.browser_lost():
                raise  # the browser died under the agent: the environment's failure
            return "agent_error", f"agent raised a browser error: {first_line(e, type(e).__name__)}"
        except Exception as e:  # noqa: BLE001 - an agent crash is the agent's failure
            return "agent_error", f"{type(e).__name__}: {e}"
        return ("answered" if tools.trajectory.answers else "no_answer"), None

    async def _conclude(
        self,
        task: dict,
        row: dict,
        state: RunState,
        entry_obs: dict,
        probes: list[dict],
        status: str,
        error: str | None,
    ) -> None:
        """The harness's own look at the page, before anything is closed (the tab the agent
        ended on, or the harness's page when the agent closed its own), the after-probes,
        the outcome's environment failure if any, and the artifacts."""
        if state.closed.is_set() or not state.context_alive():
            raise PlaywrightError("browser closed or crashed while the agent ran")
        tools = state.tools
        final_page = _final_page(tools, state.page, state.context)
        timeout = self.settings.observe_timeout_s
        final_obs = (
            await observe_within(final_page, timeout, state.readings, tools.actions)
            if final_page
            else None
        )
        row["observation"] = {
            "entry": entry_obs,
            "final": final_obs,
            "probes": probes,
            # What the run's reading cost: DOM reads a later read reused (nothing done to the
            # page in between), and documents parsed once for two readers.
            "reads": {"reused": state.readings.reused, "parsed_once": state.readings.hits},
        }
        if final_obs is not None:
            answer = tools.trajectory.answers[-1].value if tools.trajectory.answers else None
            seen = Evidence(entry=entry_obs, final=final_obs, probes=list(probes), task=task)
            probes += await self._prober.after(state.probe_browser, task, row, seen, answer)
        row.update(outcome_failure(status, error, final_obs, tools.trajectory.site_errors))
        await self._capture.artifacts(state.context, final_page, row, task, state, tools)

    async def _clean_up(self, agent: Agent, task: dict, row: dict, state: RunState) -> None:
        """Whatever happened to the run; never raises."""
        if state.tools is not None:
            # What an adapter kept of its agent, whatever happened to the run.
            try:
                self._capture.outputs(row, task, outputs_of(agent, state.tools))
            except Exception as e:  # noqa: BLE001 - must not hide the run's own outcome
                row.setdefault("artifact_errors", {})["adapter_outputs"] = str(e)
        if state.context is not None:
            try:
                await asyncio.wait_for(state.context.close(), self.settings.cleanup_timeout_s)
            except Exception as e:  # noqa: BLE001 - cleanup must never raise
                row["cleanup_error"] = f"{type(e).__name__}: {e}"
        if state.cdp is not None:
            await state.cdp.stop()
        if state.own_dir is not None:
            shutil.rmtree(state.own_dir, ignore_errors=True)

    async def _world_events(self, row: dict) -> None:
        """What the run changed and leaked, as the world's own server recorded it (after
        cleanup, so nothing is still in flight). Kept under observation.world_events."""
        template = self.options.routing.events_url
        if not template or row.get("replay"):
            return  # a replayed run touched no world: its requests are in the replay log
        url = template.format(scope=world_scope(row))
        obs = row["observation"] = row.get("observation") or {}
        obs["world_scope"] = world_scope(row)
        client = self._events_client or async_client(timeout=5)
        try:
            response = await client.get(url)
            response.raise_for_status()
            obs["world_events"] = response.json()["events"]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as e:
            obs["world_events_error"] = f"{type(e).__name__}: {e}"
        finally:
            if client is not self._events_client:
                await client.aclose()


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


def run_tasks(
    tasks: Sequence[dict], day: date, runner: Runner, progress: Callable[[dict], None] | None = None
) -> list[dict]:
    """Synchronous entry point for callers outside an event loop (assets, the CLI)."""
    return run_batch(runner.run(tasks, day, progress))
