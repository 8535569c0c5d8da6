"""The browser-use adapter: Browser Use (PyPI `browser-use`, 0.13.x) attached over CDP to the
harness's own browser, its model any OpenAI-compatible Chat Completions endpoint.

The runner gives this adapter (`needs_cdp = True`) `tools.cdp_url`: a Chromium dedicated to the
run whose default context is the harness's guarded context, the entry page already open. Browser
Use connects with `keep_alive=True` and is disconnected (never closed) afterwards, so the page
the harness observes and scores is still there. Browser Use's own steps do not go through
BrowserTools; each action it takes is copied into the trajectory (tool `bu.<action>`), its token
usage is reported with `tools.use_tokens`, and its `done` becomes the answer: a JSON object in
the done text is the answer dict, any other text is `{"text": ...}`; `claims_success` is done's
success flag.

Manifest: `model`, `prompt` (appended to Browser Use's system prompt), and `params`:
  base_url or local_model (core.agents.local_model), api_key_env (default OPENAI_API_KEY),
  temperature (default 0), timeout_s (the wall-clock cap of one model call, 60),
  max_completion_tokens (its token cap, 512), retries (2), headers, use_vision (default
  false), use_judge (default false), max_actions_per_step (default 3), max_failures
  (consecutive failed steps before it gives up, default 3), flash_mode (default false), and
  structured_output: `json_schema` (the default for an endpoint elsewhere: Browser Use asks
  for `response_format: json_schema`, as OpenAI and vLLM serve it) or `prompt` (the default
  for a local model: the schema goes in the system prompt and no `response_format` is sent,
  Browser Use's `dont_force_structured_output` + `add_schema_to_system_prompt`; for servers
  that refuse json_schema, as llama-cpp-python's did).
Its observation budget, for small contexts: `actions` (the Browser Use actions offered, by
name; default all: each costs schema in the prompt), `max_page_chars` (the page's interactive
elements shown per step, Browser Use's max_clickable_elements_length; default 40000, or what a
known context leaves: `context_tokens`, or the local model's), `max_history_items`.
A model call past its caps ends the run as `runaway_output`, but one cut short of its token cap
because the context filled up is the harness's (the prompt left the model no room); the last
step failing because the model's reply was not an action Browser Use could read, as
`prose_instead_of_action`; a refused request, as chat_endpoint decides
(core.agents.chat_endpoint).
Browser Use's anonymized telemetry, its PyPI version check, its element highlighting (which
would draw on the scored page) and its signal handlers are off.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from importlib import metadata
from typing import Any

from newsbench_dagster.core import input_files
from newsbench_dagster.core.agents.adapters.openai_tools import task_message
from newsbench_dagster.core.agents.chat_endpoint import (
    ChatEndpoint,
    Endpoint,
    context_filled_up,
    public_url,
    refusal,
)
from newsbench_dagster.core.agents.protocol import AgentManifest, AgentTask
from newsbench_dagster.core.agents.tools import BrowserTools
from newsbench_dagster.core.errors import ConfigError, ModelEndpointError, ModelOutputFailure

# Set only while Browser Use is imported and its agent built (synchronous code, so nothing else
# runs meanwhile); Browser Use reads these there, and they never stay in os.environ.
_QUIET_ENV = {
    "ANONYMIZED_TELEMETRY": "false",
    "BROWSER_USE_CLOUD_SYNC": "false",
    "BROWSER_USE_VERSION_CHECK": "false",
    "BROWSER_USE_SETUP_LOGGING": "false",  # leave the host's logging alone
}

ANSWER_NOTE = (
    "When you are done, call done with success=true only if you found the answer, and put the "
    "answer in done's text as one JSON object with short lowercase keys named after what was "
    'asked (for example {"headline": ..., "url": ...}; times as ISO 8601).'
)
DEFAULT_MAX_STEPS = 15


@contextlib.contextmanager
def _quiet_env() -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in _QUIET_ENV}
    os.environ.update(_QUIET_ENV)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def browser_use_version() -> str:
    try:
        return metadata.version("browser-use")
    except metadata.PackageNotFoundError:
        return "not installed"


def parse_done(text: str | None) -> dict[str, Any]:
    """The answer dict in a done text: the text as a JSON object, else the outermost {...} in
    it that parses as one, else {"text": text}."""
    text = (text or "").strip()
    candidates = [text]
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", text, re.S)
    if fenced:
        candidates.append(fenced.group(1))
    if "{" in text and "}" in text:
        candidates.append(text[text.index("{") : text.rindex("}") + 1])
    for c in candidates:
        try:
            value = input_files.loads(c)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return {"text": text}


class BrowserUseAgent:
    needs_cdp = True  # the runner hands tools.cdp_url to adapters that say so

    def __init__(self, manifest: AgentManifest) -> None:
        self.manifest = manifest
        p = manifest.params
        self.endpoint = Endpoint.of(manifest)
        self.chat = ChatEndpoint(self.endpoint)
        local = self.endpoint.local is not None
        self.structured_output = p.get("structured_output", "prompt" if local else "json_schema")
        if self.structured_output not in ("json_schema", "prompt"):
            raise ConfigError(
                f"agent {manifest.agent_version}: params.structured_output must be json_schema "
                f"or prompt, not {self.structured_output!r}"
            )
        self.parallel_runs = 1 if local else None  # a local server answers one call at a time
        self.use_vision: bool = bool(p.get("use_vision", False))
        self.use_judge: bool = bool(p.get("use_judge", False))
        self.max_actions_per_step: int = int(p.get("max_actions_per_step", 3))
        self.flash_mode: bool = bool(p.get("flash_mode", False))
        self.max_failures: int = int(p.get("max_failures", 3))  # consecutive failed steps
        self.actions: list[str] | None = p.get("actions")
        context = p.get("context_tokens") or (local and self.endpoint.local.n_ctx)
        # What a known context leaves the page: half of it, at ~3 characters a token.
        default_chars = min(40000, int(context * 1.5)) if context else 40000
        self.max_page_chars: int = int(p.get("max_page_chars", default_chars))
        self.max_history_items: int | None = p.get("max_history_items")
        # Per run (one agent serves concurrent runs).
        self._stats: weakref.WeakKeyDictionary[BrowserTools, dict] = weakref.WeakKeyDictionary()

    def secrets(self) -> dict[str, str]:
        """The endpoint's key, for the harness to redact from everything the run leaves."""
        return self.endpoint.secrets()

    def describe(self) -> dict:
        """The settings every run of this agent uses (no secrets), Browser Use's version, judge
        and vision included; the runner stores it as environment.agent_settings."""
        return {
            "adapter": "browser_use",
            "browser_use_version": browser_use_version(),
            "model": self.manifest.model,
            **self.chat.describe(),
            "structured_output": self.structured_output,
            "use_vision": self.use_vision,
            "use_judge": self.use_judge,
            "max_actions_per_step": self.max_actions_per_step,
            "flash_mode": self.flash_mode,
            "max_failures": self.max_failures,
            "actions": self.actions,
            "max_page_chars": self.max_page_chars,
            "telemetry": False,
        }

    def serve(self) -> contextlib.AbstractAsyncContextManager:
        """The runner's batch hook: a local model's server for every run of the batch."""
        return self.chat.serve()

    def run_outputs(self, tools: BrowserTools) -> dict:
        """What Browser Use did in this run (steps, max_steps, model errors), for the run row."""
        return {"browser_use": dict(self._stats.get(tools, {}))}

    async def run(self, task: AgentTask, tools: BrowserTools) -> None:
        if not tools.cdp_url:
            raise RuntimeError(
                "browser_use needs tools.cdp_url: the runner must give adapters with "
                "needs_cdp = True a CDP endpoint of the run's browser"
            )
        key = self.endpoint.key()
        max_steps = int(task.constraints.get("max_steps", DEFAULT_MAX_STEPS))
        stats = self._stats[tools] = {"max_steps": max_steps, "steps": 0, "llm_errors": 0}
        workdir = tempfile.mkdtemp(prefix="newsbench-bu-")
        try:
            await self._run(task, tools, key, max_steps, stats, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    async def _run(
        self,
        task: AgentTask,
        tools: BrowserTools,
        key: str,
        max_steps: int,
        stats: dict,
        workdir: str,
    ) -> None:
        llm_failure: list[Exception] = []  # the model's last failure, if it failed last
        chat, cap = self.chat, self.endpoint.timeout_s
        token_cap = self.endpoint.max_completion_tokens
        running: list[Any] = []  # the Browser Use agent, once built (to stop it)
        last_reply: dict[str, int] = {}  # the last completion's usage, as the server said
        if chat.start_error is not None:
            raise ModelEndpointError(chat.start_error, fault="environment")
        with _quiet_env():
            from browser_use import Agent, BrowserSession, Tools
            from browser_use.llm.exceptions import ModelOutputTruncatedError
            from browser_use.llm.openai.chat import ChatOpenAI
            from browser_use.telemetry.service import ProductTelemetry

            ProductTelemetry()  # the singleton is built here, with telemetry off

            class _ChatModel(ChatOpenAI):
                async def ainvoke(self, messages, output_format=None, **kwargs):  # type: ignore[no-untyped-def, override]
                    try:
                        # A local server's calls take turns; the cap starts with the turn.
                        async with chat.turn():
                            last_reply.clear()
                            call = super().ainvoke(messages, output_format, **kwargs)
                            try:
                                out = await asyncio.wait_for(call, cap)
                            except TimeoutError:
                                raise await chat.overran() from None
                        used = getattr(out.usage, "completion_tokens", 0) or 0
                        if used > token_cap:
                            raise ModelOutputFailure(
                                "runaway_output",
                                f"the model generated {used} completion tokens in one call, "
                                f"over its cap of {token_cap} (max_completion_tokens)",
                            )
                    except Exception as e:
                        failure: Exception = e
                        if isinstance(e, ModelOutputTruncatedError):
                            failure = _truncated(e, last_reply, token_cap)
                        llm_failure[:] = [failure]
                        stats["llm_errors"] += 1
                        if failure is not e and running:
                            running[0].stop()  # no further steps after a cut reply
                        if failure is e:
                            raise
                        raise failure from None
                    llm_failure.clear()
                    return out

            class _Agent(Agent):
                async def _log_agent_run(self) -> None:
                    pass  # no PyPI version check: runs are offline and never phone home

            prompt_schema = self.structured_output == "prompt"
            http = _usage_recording_client(last_reply)
            llm = _ChatModel(
                model=self.manifest.model or "",
                base_url=chat.base_url,
                api_key=key,
                temperature=self.endpoint.temperature,
                frequency_penalty=None,  # not every compatible server takes it
                timeout=self.endpoint.timeout_s + 10,  # the cap above is what fires
                max_retries=self.endpoint.retries,
                default_headers=self.endpoint.headers or None,
                max_completion_tokens=token_cap,
                http_client=http,
                dont_force_structured_output=prompt_schema,
                add_schema_to_system_prompt=prompt_schema,
            )
            session = BrowserSession(
                cdp_url=tools.cdp_url,
                keep_alive=True,  # never close the browser the harness scores
                # No viewport emulation: the harness's page keeps its own size and device
                # profile (headless=False only keeps Browser Use from forcing one on it).
                headless=False,
                no_viewport=True,
                highlight_elements=False,  # it would draw on the page the oracle reads
                dom_highlight_elements=False,
                auto_download_pdfs=False,
                permissions=[],
                # Browser Use keeps a storage-state file there (it launches nothing): ours, so
                # it goes when the run ends instead of piling up in /tmp.
                user_data_dir=os.path.join(workdir, "profile"),
                downloads_path=os.path.join(workdir, "downloads"),
            )
            offered = None
            if self.actions is not None:
                every = list(Tools().registry.registry.actions)
                offered = Tools(exclude_actions=[a for a in every if a not in self.actions])
            agent = _Agent(
                task=task_message(task) + "\n" + ANSWER_NOTE,
                llm=llm,
                tools=offered,
                max_clickable_elements_length=self.max_page_chars,
                max_history_items=self.max_history_items,
                browser_session=session,
                use_vision=self.use_vision,
                use_judge=self.use_judge,
                extend_system_message=self.manifest.prompt,
                max_actions_per_step=self.max_actions_per_step,
                max_failures=self.max_failures,
                flash_mode=self.flash_mode,
                directly_open_url=False,  # the harness already opened the entry page
                enable_signal_handler=False,
                calculate_cost=False,
                file_system_path=workdir,
                llm_timeout=int(self.endpoint.timeout_s) + 20,
            )
            running.append(agent)
        answered = False
        tokens_seen = 0

        async def on_step_end(a: Any) -> None:
            nonlocal answered, tokens_seen
            stats["steps"] = a.state.n_steps - 1
            if a.history.history:
                _record_step(tools, a.history.history[-1])
            if a.history.is_done() and not answered:
                answered = True  # before tokens: an answer given is kept even over budget
                await tools.answer(
                    parse_done(a.history.final_result()),
                    claims_success=bool(a.history.is_successful()),
                )
            usage = await a.token_cost_service.get_usage_summary()
            total = usage.total_prompt_tokens + usage.total_completion_tokens
            if total > tokens_seen:
                delta, tokens_seen = total - tokens_seen, total
                tools.use_tokens(delta)  # raises BudgetExceeded past the task's max_tokens

        try:
            await session.start()
            await _focus_harness_page(session, tools)
            history = await agent.run(max_steps=max_steps, on_step_end=on_step_end)
        finally:
            # Disconnect without closing anything: the harness still owns the browser.
            with contextlib.suppress(Exception):
                await session.reset()
            await http.aclose()
            # Its own scratch directory (step screenshots among others).
            shutil.rmtree(agent.agent_directory, ignore_errors=True)
        if not answered and history.is_done():
            await tools.answer(
                parse_done(history.final_result()), claims_success=bool(history.is_successful())
            )
            answered = True
        if not answered and llm_failure:
            raise _failure_of(llm_failure[0], public_url(chat.base_url), self.endpoint, key)


def _usage_recording_client(last_reply: dict[str, int]) -> Any:
    """The openai SDK's own HTTP client, noting each chat completion's usage in `last_reply`:
    Browser Use raises on a reply cut at "length" without saying how many tokens it got."""
    import openai

    async def note(response: Any) -> None:
        if not response.url.path.endswith("/chat/completions") or response.status_code != 200:
            return
        await response.aread()
        with contextlib.suppress(ValueError, AttributeError, TypeError):
            usage = response.json().get("usage") or {}
            last_reply.update(
                {k: int(usage[k]) for k in ("prompt_tokens", "completion_tokens") if k in usage}
            )

    return openai.DefaultAsyncHttpxClient(event_hooks={"response": [note]})


def _truncated(e: BaseException, last_reply: dict[str, int], cap: int) -> Exception:
    """A reply cut at "length": at its cap, the model's runaway; short of it, the context
    filled up (chat_endpoint.context_filled_up)."""
    used = last_reply.get("completion_tokens")
    if used is not None and used < cap:
        return context_filled_up(used, cap, last_reply.get("prompt_tokens", 0))
    return ModelOutputFailure("runaway_output", f"the model's reply was cut at its cap: {e}")


def _failure_of(e: BaseException, where: str, endpoint: Endpoint, key: str) -> Exception:
    """What the model call that failed last means. Browser Use wraps every failure in
    ModelProviderError (status 502 by default, even for output it could not parse), so the
    openai SDK error underneath decides: unreachable or timing out is the environment's, an
    HTTP error as chat_endpoint judges it (ours when it refused our request); our own caps
    are the agent's; anything else is a reply Browser Use could not read as an action."""
    import openai

    if isinstance(e, ModelOutputFailure | ModelEndpointError):
        return e
    cause = e.__cause__ or e
    secrets = endpoint.redactor(key)
    text = secrets.text(f"{type(e).__name__}: {e}")[:300]
    if isinstance(cause, openai.APIConnectionError):  # includes timeouts
        return ModelEndpointError(f"model endpoint {where} failed: {text}", fault="environment")
    if isinstance(cause, openai.APIStatusError):
        status = cause.status_code
        detail = secrets.text(str(cause.message))[:300]
        failure = refusal(status, detail, where, endpoint.api_key_env)
        return failure or ModelEndpointError(
            f"model endpoint {where} failed: HTTP {status}: {detail}",
            fault="environment",
            status=status,
        )
    return ModelOutputFailure(
        "prose_instead_of_action",
        f"the model's reply was not an action Browser Use could read: {text}",
    )


async def _focus_harness_page(session: Any, tools: BrowserTools) -> None:
    """Point Browser Use at the tab the harness loaded (it would pick the first tab)."""
    cdp = await tools.page.context.new_cdp_session(tools.page)
    try:
        info = await cdp.send("Target.getTargetInfo")
    finally:
        with contextlib.suppress(Exception):
            await cdp.detach()
    await session.get_or_create_cdp_session(info["targetInfo"]["targetId"], focus=True)


def _record_step(tools: BrowserTools, item: Any) -> None:
    """Browser Use's actions of one step, in the trajectory like the harness's own steps."""
    actions = item.model_output.action if item.model_output else []
    results = list(item.result or [])
    for i, action in enumerate(actions):
        data = action.model_dump(exclude_unset=True, mode="json")
        name, params = next(iter(data.items())) if data else ("unknown", {})
        if name == "done":
            continue  # the answer is recorded by tools.answer
        result = results[i] if i < len(results) else None
        error = getattr(result, "error", None)
        raw = json.dumps(params, default=str)
        tools.record(
            f"bu.{name}",
            params if len(raw) <= 2000 else {"truncated": raw[:2000]},
            status="error" if error else "ok",
            error=str(error)[:500] if error else None,
            url=item.state.url if item.state else None,
        )


def create(manifest: AgentManifest) -> BrowserUseAgent:
    return BrowserUseAgent(manifest)
