"""The openai-tools adapter: a tool-calling loop over any OpenAI-compatible Chat Completions
endpoint (POST {base_url}/chat/completions with `tools`, `tool_choice: "auto"`).

The model sees the task in words and drives the harness's page through the tool API
(core.agents.tools.BrowserTools); the tools it is offered are derived from that API
(core.agents.tool_specs), so a new tool method is a new tool here without further edits. The
model answers with the `answer` tool (it may answer more than once) and stops with `finish` or
by replying without tool calls.

Manifest: `model` (the endpoint's model id), `prompt` (system prompt; a default is used when
empty) and `params`:
  base_url       the endpoint's base, e.g. https://api.openai.com/v1 (or `local_model`: a model
                 the harness serves itself, core.agents.local_model)
  api_key_env    the environment variable holding the key (default OPENAI_API_KEY)
  temperature    default 0
  max_turns      model calls per run (default 20)
  timeout_s      the wall-clock cap of one model call (default 60)
  max_completion_tokens  the completion-token cap of one call (default 512)
  retries        extra attempts on a connection error, 429 or 5xx (default 2)
  retry_backoff_s first retry delay, doubled each time (default 1.0)
  max_result_bytes  tool results are cut to this many bytes before the model sees them (8192)
  max_invalid_calls malformed tool calls in a row that end the run (default 3)
  context_tokens the model's context window, which every prompt is fitted into
                 (core.agents.context_budget; default: the local model's, else unbounded)
  tools          the tools offered, by name (default: every tool of the API, and finish)
  headers        extra HTTP headers (e.g. an org or gateway header; never the key itself)

What a real model does to a harness ends its run as the agent's failure, with its own class
(never an environment failure, never a crash): a call past its caps (`runaway_output`),
`max_invalid_calls` malformed calls in a row (`malformed_tool_call`: an unknown tool,
arguments that are not JSON or not the tool's), a reply in prose with no answer given
(`prose_instead_of_action`), a conversation that no longer fits (`context_overflow`). Tokens
are the server's reported usage. Requests carry no `null` content and no structured-output
field, so OpenAI, vLLM, Ollama and llama.cpp's servers all take them; who is to blame when one
is refused is decided in core.agents.chat_endpoint.

The key is read from the environment when a run starts, never at import; it is sent only in
the Authorization header and redacted from any error text, so it cannot reach the trajectory,
the run row or artifacts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from newsbench_dagster.core import input_files
from newsbench_dagster.core.agents.chat_endpoint import (
    ChatEndpoint,
    Endpoint,
    context_filled_up,
    first_message,
)
from newsbench_dagster.core.agents.context_budget import ContextBudget
from newsbench_dagster.core.agents.protocol import AgentManifest, AgentTask
from newsbench_dagster.core.agents.tool_specs import tool_specs
from newsbench_dagster.core.agents.tools import BrowserTools
from newsbench_dagster.core.agents.trajectory import truncate_utf8
from newsbench_dagster.core.errors import ConfigError, ModelOutputFailure

DEFAULT_SYSTEM_PROMPT = """You are a careful web research agent working in a real browser.
The page named in the task is already open. Use the tools to look at pages (read_page and
get_metadata give structured readings of the current page; extract_text, links and
accessibility_snapshot show what is on it) and to navigate. Only report what the pages show.
When you know the answer, call `answer` with a JSON object whose keys are short lowercase
names of what was asked (for example headline, url, authors, published, modified, text, time;
times as ISO 8601), and claims_success=true only if you are confident. Then call `finish`."""


# -- the tool table ----------------------------------------------------------------------------
Call = Callable[[BrowserTools, dict], Awaitable[Any]]


@dataclass(frozen=True)
class Tool:
    description: str
    parameters: dict
    call: Call


def _method(name: str) -> Call:
    return lambda t, a: getattr(t, name)(**a)


async def _screenshot(t: BrowserTools, a: dict) -> dict:
    # Text-only adapter: the model learns the shot was taken and its size, never the bytes.
    shot = await t.screenshot(**a)
    if not shot.get("ok"):
        return shot
    return {
        "ok": True,
        "width": shot["width"],
        "height": shot["height"],
        "bytes": len(shot["png"]),
        "note": "screenshot taken; images are not shown to this model, use read_page or "
        "accessibility_snapshot to see the page",
    }


async def _finish(t: BrowserTools, a: dict) -> dict:
    return {"ok": True, "finished": True}


# What this text-only model is told and given differently from the tool API (every tool is
# offered): the screenshot by its size only. And `finish`, which is no tool of the API.
TEXT_ONLY: dict[str, tuple[str, Call]] = {
    "screenshot": ("This model is told its size only.", _screenshot),
}
FINISH = Tool(
    "Stop working on the task (after answering).", {"type": "object", "properties": {}}, _finish
)


def _tools() -> dict[str, Tool]:
    tools = {}
    for name, spec in tool_specs().items():
        note, call = TEXT_ONLY.get(name, ("", _method(name)))
        tools[name] = Tool(f"{spec.description} {note}".strip(), spec.parameters, call)
    return {**tools, "finish": FINISH}


TOOLS: dict[str, Tool] = _tools()


def chat_tools(tools: dict[str, Tool] | None = None) -> list[dict]:
    """The `tools` array of a Chat Completions request (every tool by default)."""
    return [
        {
            "type": "function",
            "function": {"name": name, "description": t.description, "parameters": t.parameters},
        }
        for name, t in (TOOLS if tools is None else tools).items()
    ]


# -- helpers -----------------------------------------------------------------------------------
def _truncate(text: str, limit: int) -> str:
    cut, truncated = truncate_utf8(text, limit)
    if not truncated:
        return text
    return f"{cut}\n...[truncated: {len(text.encode('utf-8')) - limit} more bytes]"


def task_message(task: AgentTask) -> str:
    """What a person would tell the agent: the task's prompt (or its intent and inputs), the
    other inputs it was given, and where the browser is."""
    inputs = dict(task.inputs)
    prompt = inputs.pop("prompt", None) or f"Task: {task.intent.replace('_', ' ')}."
    lines = [prompt]
    if inputs:
        lines.append("Details: " + json.dumps(inputs, ensure_ascii=False))
    if task.answer_format:
        fields = "; ".join(f"{k}: {v}" for k, v in task.answer_format.items())
        lines.append(f"Answer with a JSON object with these fields: {fields}")
    lines.append(f"The browser is already open at {task.entry_url}")
    return "\n".join(lines)


def _check_args(name: str, tool: Tool, args: Any) -> str | None:
    """Why these arguments cannot be passed to the tool, or None (the method itself judges
    values: a missing target is a ValueError there, reported the same way)."""
    if not isinstance(args, dict):
        return f"{name}: arguments must be a JSON object"
    props = tool.parameters.get("properties", {})
    unknown = sorted(set(args) - set(props))
    if unknown:
        allowed = ", ".join(props) or "none"
        return f"{name}: unknown argument(s) {', '.join(unknown)} (allowed: {allowed})"
    missing = [k for k in tool.parameters.get("required", []) if k not in args]
    if missing:
        return f"{name}: missing required argument(s) {', '.join(missing)}"
    return None


# -- the agent ---------------------------------------------------------------------------------
class OpenAIToolsAgent:
    def __init__(self, manifest: AgentManifest) -> None:
        self.manifest = manifest
        p, who = manifest.params, f"agent {manifest.agent_version}"
        self.endpoint = Endpoint.of(manifest)
        self.chat = ChatEndpoint(self.endpoint, float(p.get("retry_backoff_s", 1.0)))
        self.max_turns: int = int(p.get("max_turns", 20))
        self.max_result_bytes: int = int(p.get("max_result_bytes", 8192))
        self.max_invalid_calls: int = int(p.get("max_invalid_calls", 3))
        local = self.endpoint.local
        self.context_tokens: int | None = p.get("context_tokens") or (local and local.n_ctx)
        offered = p.get("tools") or list(TOOLS)
        unknown = sorted(set(offered) - set(TOOLS)) if isinstance(offered, list) else offered
        if unknown:
            raise ConfigError(f"{who}: params.tools: unknown {unknown} (known: {', '.join(TOOLS)})")
        self.tools = {name: TOOLS[name] for name in offered}
        self.system_prompt = manifest.prompt or DEFAULT_SYSTEM_PROMPT
        # A local server answers one call at a time: its runs take turns (runner hook).
        self.parallel_runs = 1 if local is not None else None
        # Per run (one agent serves concurrent runs): counts only, never message contents.
        self._stats: weakref.WeakKeyDictionary[BrowserTools, dict] = weakref.WeakKeyDictionary()

    def secrets(self) -> dict[str, str]:
        """The endpoint's key, for the harness to redact from everything the run leaves."""
        return self.endpoint.secrets()

    def describe(self) -> dict:
        """The settings every run of this agent uses (no secrets), for the run's environment
        record; the runner stores it as environment.agent_settings."""
        return {
            "adapter": "openai_tools",
            "model": self.manifest.model,
            **self.chat.describe(),
            "max_turns": self.max_turns,
            "max_result_bytes": self.max_result_bytes,
            "max_invalid_calls": self.max_invalid_calls,
            "context_tokens": self.context_tokens,
            "tools": list(self.tools),
            "vision": False,
        }

    @contextlib.asynccontextmanager
    async def serve(self):
        """The runner's batch hook: a local model's server for every run of the batch, which
        has read the prompt every call starts with (system prompt and tools) before the first
        run: the server keeps what it read, so no run's first call pays for it (2k tokens
        read cold took over 30 s on two busy cores)."""
        async with self.chat.serve():
            if self.chat.server is not None:
                # A forced call of the simplest tool: the prompt rendered as every call's is,
                # and a few tokens written (auto choice could run on at the server's whim).
                simplest = "finish" if "finish" in self.tools else next(iter(self.tools))
                await self.chat.warm_up(
                    {
                        "model": self.manifest.model,
                        "messages": [
                            {"role": "system", "content": self.system_prompt},
                            {"role": "user", "content": "Warm-up: call the tool."},
                        ],
                        "tools": chat_tools(self.tools),
                        "tool_choice": {"type": "function", "function": {"name": simplest}},
                        "max_tokens": 16,
                    }
                )
            yield

    def run_outputs(self, tools: BrowserTools) -> dict:
        """What this run's loop did (turns, tool calls, malformed calls, context trims, why it
        stopped), for the run row."""
        return {"model_loop": dict(self._stats.get(tools, {}))}

    async def run(self, task: AgentTask, tools: BrowserTools) -> None:
        key = self.endpoint.key()
        stats = self._stats[tools] = {
            "turns": 0,
            "tool_calls": 0,
            "invalid_tool_calls": 0,
            "completion_tokens": [],
            "call_seconds": [],
            # Tool results in each prompt sent, and each valid goto's target: one the task or an
            # earlier tool result showed (grounded) or one the model made up (invented).
            "tool_results_sent": [],
            "goto": {"grounded": 0, "invented": 0},
        }
        budget = (
            ContextBudget(self.context_tokens, self.endpoint.max_completion_tokens)
            if self.context_tokens
            else None
        )
        messages: list[dict] = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": task_message(task)},
        ]
        specs = chat_tools(self.tools)
        try:
            async with self.chat.client(key) as client:
                secrets = self.endpoint.redactor(key)
                await self._loop(task, tools, client, secrets, messages, specs, stats, budget)
        except ModelOutputFailure as e:
            stats["stopped"] = e.kind
            raise
        finally:
            if budget is not None:
                stats["context"] = budget.as_dict()

    async def _loop(self, task, tools, client, secrets, messages, specs, stats, budget) -> None:  # noqa: PLR0913
        invalid_in_a_row = 0
        cap = self.endpoint.max_completion_tokens
        for _ in range(self.max_turns):
            sent = budget.fit(messages, specs) if budget else messages
            stats["tool_results_sent"].append(sum(m.get("role") == "tool" for m in sent))
            payload = {
                "model": self.manifest.model,
                "messages": sent,
                "tools": specs,
                "tool_choice": "auto",
                "temperature": self.endpoint.temperature,
                "max_tokens": cap,
            }
            started = asyncio.get_running_loop().time()
            body = await self.chat.complete(client, payload, secrets)
            stats["call_seconds"].append(round(asyncio.get_running_loop().time() - started, 2))
            stats["turns"] += 1
            usage = body.get("usage") or {}
            prompt_tokens = int(usage.get("prompt_tokens") or 0)
            completion = int(usage.get("completion_tokens") or 0)
            stats["completion_tokens"].append(completion)
            if budget:
                budget.calibrate(prompt_tokens)
            tools.use_tokens(prompt_tokens + completion or int(usage.get("total_tokens") or 0))
            message, finish = first_message(body, secrets)
            calls = message.get("tool_calls") or []
            if completion > cap:
                raise ModelOutputFailure(
                    "runaway_output",
                    f"the model generated {completion} completion tokens in one call, over its "
                    f"cap of {cap} (max_completion_tokens; the server did not stop it)",
                )
            if finish == "length" and completion < cap:
                raise context_filled_up(completion, cap, prompt_tokens)
            if finish == "length":
                # Cut at the cap: prose without a call, or a call whose arguments never ended.
                what = "in a tool call's arguments" if calls else "without a tool call"
                raise ModelOutputFailure(
                    "runaway_output", f"the model's reply was cut at its {cap}-token cap {what}"
                )
            # The assistant turn goes back as sent, with a string content (llama-cpp-python's server
            # refuses null beside tool_calls; OpenAI, vLLM and Ollama take either).
            messages.append(
                {
                    "role": "assistant",
                    "content": message.get("content") or "",
                    **({"tool_calls": calls} if calls else {}),
                }
            )
            if not calls:
                text = str(message.get("content") or "").strip()
                if text and not tools.trajectory.answers:
                    stats["prose"] = text[:500]
                    raise ModelOutputFailure(
                        "prose_instead_of_action",
                        f"the model replied in prose instead of calling a tool: {text[:200]!r}",
                    )
                return  # the model is done talking
            finished, valid = False, False
            for call in calls:
                result, done, ok = await self._dispatch(call, tools, stats, messages)
                finished, valid = finished or done, valid or ok
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": (call.get("id") if isinstance(call, dict) else None)
                        or "missing",
                        "content": _truncate(
                            json.dumps(result, ensure_ascii=False, default=str),
                            self.max_result_bytes,
                        ),
                    }
                )
            invalid_in_a_row = 0 if valid else invalid_in_a_row + 1
            if invalid_in_a_row >= self.max_invalid_calls and not tools.trajectory.answers:
                raise ModelOutputFailure(
                    "malformed_tool_call",
                    f"{invalid_in_a_row} turns of malformed tool calls in a row "
                    f"(max_invalid_calls); the last: {result.get('error')}",
                )
            if finished:
                return
        stats["stopped"] = f"max_turns ({self.max_turns}) reached"

    async def _dispatch(
        self, call: Any, tools: BrowserTools, stats: dict, read: list[dict]
    ) -> tuple[Any, bool, bool]:
        """Run one tool call: (result, finished, valid); a malformed one is recorded and
        told to the model. `read`: the conversation so far (a goto is grounded in it or not)."""
        fn = (call.get("function") or {}) if isinstance(call, dict) else {}
        name = fn.get("name")
        raw = fn.get("arguments") or "{}"
        tool = self.tools.get(name) if isinstance(name, str) else None
        error: str | None = None
        args: Any = None
        if tool is None:
            error = f"unknown tool {name!r}; the tools are: {', '.join(self.tools)}"
        else:
            try:
                args = input_files.loads(raw) if isinstance(raw, str) else raw
            except ValueError as e:
                said = f"{e.msg} at char {e.pos}" if isinstance(e, json.JSONDecodeError) else e
                error = f"{name}: arguments are not valid JSON ({said})"
            else:
                error = _check_args(name, tool, args)
        if error is None and tool is not None:
            stats["tool_calls"] += 1
            if name == "goto" and isinstance(args, dict):
                stats["goto"]["grounded" if grounded(args.get("url"), read) else "invented"] += 1
            try:
                return await tool.call(tools, args), name == "finish", True
            except (TypeError, ValueError) as e:  # bad values the tool itself refuses
                error = f"{name}: {e}"
        stats["invalid_tool_calls"] += 1
        _record_invalid(tools, name, raw, error or "invalid call")
        return {"ok": False, "error": error}, False, False


def grounded(url: Any, read: list[dict]) -> bool:
    """Whether `url` appeared in the task or in a tool result the model had been given: a
    target it read, not one it made up (a model that cannot see its tool results invents)."""
    bare = url.strip().rstrip("/") if isinstance(url, str) else ""
    if not bare:
        return False
    # The whole URL, not the start of a longer one (a trailing slash either way).
    whole = re.compile(re.escape(bare) + r"/?(?![\w\-.~%/?#=&+])")
    return any(
        whole.search(m["content"])
        for m in read
        if m.get("role") in ("user", "tool") and isinstance(m.get("content"), str)
    )


def _record_invalid(tools: BrowserTools, name: Any, raw: Any, error: str) -> None:
    """A malformed call in the trajectory, so the run shows it (and it costs a step)."""
    tools.record(
        "invalid_tool_call",
        {"name": str(name)[:100], "arguments": str(raw)[:500]},
        status="error",
        error=error[:500],
        budgeted=True,
    )


def create(manifest: AgentManifest) -> OpenAIToolsAgent:
    return OpenAIToolsAgent(manifest)
