"""The openai-tools adapter: a tool-calling loop over any OpenAI-compatible Chat Completions
endpoint (POST {base_url}/chat/completions with `tools`, `tool_choice: "auto"`).

The model sees the task in words and drives the harness's page through the tool API
(core.agents.tools.BrowserTools); the tools it is offered are derived from that API
(core.agents.tool_specs), so a new tool method is a new tool here without further edits. The
model answers with the `answer` tool (it may answer more than once) and stops with `finish` or
by replying without tool calls.

Manifest: `model` (the endpoint's model id), `prompt` (system prompt; a default is used when
empty) and `params`:
  base_url       the endpoint's base, e.g. https://api.openai.com/v1 (required)
  api_key_env    the environment variable holding the key (default OPENAI_API_KEY)
  temperature    default 0
  max_turns      model calls per run (default 20)
  timeout_s      per HTTP request (default 60)
  retries        extra attempts on a connection error, 429 or 5xx (default 2)
  retry_backoff_s first retry delay, doubled each time (default 1.0)
  max_result_bytes  tool results are cut to this many bytes before the model sees them (8192)
  headers        extra HTTP headers (e.g. an org or gateway header; never the key itself)

The key is read from the environment when a run starts, never at import; it is sent only in
the Authorization header and redacted from any error text, so it cannot reach the trajectory,
the run row or artifacts.
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from newsbench_dagster.core.agents.protocol import AgentManifest, AgentTask
from newsbench_dagster.core.agents.tool_specs import tool_specs
from newsbench_dagster.core.agents.tools import BrowserTools
from newsbench_dagster.core.agents.trajectory import truncate_utf8
from newsbench_dagster.core.errors import ConfigError, ModelEndpointError
from newsbench_dagster.core.web.network import async_client

DEFAULT_SYSTEM_PROMPT = """You are a careful web research agent working in a real browser.
The page named in the task is already open. Use the tools to look at pages (read_page and
get_metadata give structured readings of the current page; extract_text, links and
accessibility_snapshot show what is on it) and to navigate. Only report what the pages show.
When you know the answer, call `answer` with a JSON object whose keys are short lowercase
names of what was asked (for example headline, url, authors, published, modified, text, time;
times as ISO 8601), and claims_success=true only if you are confident. Then call `finish`."""

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
REDACTED = "[redacted]"


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


def chat_tools() -> list[dict]:
    """The `tools` array of a Chat Completions request."""
    return [
        {
            "type": "function",
            "function": {"name": name, "description": t.description, "parameters": t.parameters},
        }
        for name, t in TOOLS.items()
    ]


# -- helpers -----------------------------------------------------------------------------------
def _truncate(text: str, limit: int) -> str:
    cut, truncated = truncate_utf8(text, limit)
    if not truncated:
        return text
    return f"{cut}\n...[truncated: {len(text.encode('utf-8')) - limit} more bytes]"


def redact(text: str, secret: str | None) -> str:
    return text.replace(secret, REDACTED) if secret else text


def public_url(url: str) -> str:
    """The URL without credentials or query (either could carry a key)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


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


# -- the endpoint ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Endpoint:
    """Where a model-backed adapter's model lives, from its manifest (both adapters)."""

    base_url: str
    api_key_env: str
    temperature: float
    timeout_s: float
    retries: int
    headers: dict[str, str]

    @classmethod
    def of(cls, manifest: AgentManifest) -> Endpoint:
        """The manifest's endpoint, or a ConfigError naming the agent and the field."""
        p, who = manifest.params, f"agent {manifest.agent_version}"
        if not manifest.model:
            raise ConfigError(f"{who}: {manifest.adapter} needs `model`")
        if not isinstance(p.get("base_url"), str) or not p["base_url"].startswith("http"):
            raise ConfigError(f"{who}: {manifest.adapter} needs params.base_url (http...)")
        endpoint = cls(
            base_url=p["base_url"].rstrip("/"),
            api_key_env=p.get("api_key_env", "OPENAI_API_KEY"),
            temperature=float(p.get("temperature", 0.0)),
            timeout_s=float(p.get("timeout_s", 60.0)),
            retries=int(p.get("retries", 2)),
            headers={str(k): str(v) for k, v in (p.get("headers") or {}).items()},
        )
        if any(k.lower() == "authorization" for k in endpoint.headers):
            raise ConfigError(
                f"{who}: the key comes from {endpoint.api_key_env}, not from params.headers"
            )
        return endpoint

    def key(self) -> str:
        """The key, read from the environment when a run starts (never at import)."""
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ModelEndpointError(
                f"the model key is not set: environment variable {self.api_key_env} is empty",
                environmental=True,
            )
        return key


# -- the agent ---------------------------------------------------------------------------------
class OpenAIToolsAgent:
    def __init__(self, manifest: AgentManifest) -> None:
        self.manifest = manifest
        p = manifest.params
        self.endpoint = Endpoint.of(manifest)
        self.max_turns: int = int(p.get("max_turns", 20))
        self.retry_backoff_s: float = float(p.get("retry_backoff_s", 1.0))
        self.max_result_bytes: int = int(p.get("max_result_bytes", 8192))
        self.system_prompt = manifest.prompt or DEFAULT_SYSTEM_PROMPT
        # Per run (one agent serves concurrent runs): counts only, never message contents.
        self._stats: weakref.WeakKeyDictionary[BrowserTools, dict] = weakref.WeakKeyDictionary()

    def describe(self) -> dict:
        """The settings every run of this agent uses (no secrets), for the run's environment
        record; the runner stores it as environment.agent_settings."""
        return {
            "adapter": "openai_tools",
            "model": self.manifest.model,
            "base_url": public_url(self.endpoint.base_url),
            "api_key_env": self.endpoint.api_key_env,
            "temperature": self.endpoint.temperature,
            "max_turns": self.max_turns,
            "max_result_bytes": self.max_result_bytes,
            "tools": list(TOOLS),
            "vision": False,
        }

    def run_outputs(self, tools: BrowserTools) -> dict:
        """What this run's loop did (turns, tool calls, malformed calls), for the run row."""
        return {"model_loop": dict(self._stats.get(tools, {}))}

    async def run(self, task: AgentTask, tools: BrowserTools) -> None:
        key = self.endpoint.key()
        stats = self._stats[tools] = {"turns": 0, "tool_calls": 0, "invalid_tool_calls": 0}
        messages: list[dict] = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": task_message(task)},
        ]
        headers = {**self.endpoint.headers, "Authorization": f"Bearer {key}"}
        # Proxy settings from the environment apply to a real endpoint, never to loopback.
        loopback = urlsplit(self.endpoint.base_url).hostname in ("127.0.0.1", "localhost", "::1")
        async with async_client(
            headers=headers, timeout=self.endpoint.timeout_s, trust_env=not loopback
        ) as client:
            for _ in range(self.max_turns):
                body = await self._complete(client, messages, key)
                stats["turns"] += 1
                usage = body.get("usage") or {}
                used = int(usage.get("prompt_tokens") or 0) + int(
                    usage.get("completion_tokens") or 0
                )
                tools.use_tokens(used or int(usage.get("total_tokens") or 0))
                message = _first_message(body, key)
                calls = message.get("tool_calls") or []
                # The assistant turn goes back verbatim (minus fields some servers reject).
                messages.append(
                    {
                        "role": "assistant",
                        "content": message.get("content"),
                        **({"tool_calls": calls} if calls else {}),
                    }
                )
                if not calls:
                    return  # the model is done talking
                finished = False
                for call in calls:
                    result, done = await self._dispatch(call, tools, stats)
                    finished = finished or done
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
                if finished:
                    return
            stats["stopped"] = f"max_turns ({self.max_turns}) reached"

    async def _dispatch(self, call: Any, tools: BrowserTools, stats: dict) -> tuple[Any, bool]:
        """Run one tool call; a malformed one is recorded and told to the model."""
        fn = (call.get("function") or {}) if isinstance(call, dict) else {}
        name = fn.get("name")
        raw = fn.get("arguments") or "{}"
        tool = TOOLS.get(name) if isinstance(name, str) else None
        error: str | None = None
        args: Any = None
        if tool is None:
            error = f"unknown tool {name!r}; the tools are: {', '.join(TOOLS)}"
        else:
            try:
                args = json.loads(raw) if isinstance(raw, str) else raw
            except ValueError as e:
                error = f"{name}: arguments are not valid JSON ({e.msg} at char {e.pos})"
            else:
                error = _check_args(name, tool, args)
        if error is None and tool is not None:
            stats["tool_calls"] += 1
            try:
                return await tool.call(tools, args), name == "finish"
            except (TypeError, ValueError) as e:  # bad values the tool itself refuses
                error = f"{name}: {e}"
        stats["invalid_tool_calls"] += 1
        _record_invalid(tools, name, raw, error or "invalid call")
        return {"ok": False, "error": error}, False

    async def _complete(self, client: httpx.AsyncClient, messages: list[dict], key: str) -> dict:
        payload = {
            "model": self.manifest.model,
            "messages": messages,
            "tools": chat_tools(),
            "tool_choice": "auto",
            "temperature": self.endpoint.temperature,
        }
        url = f"{self.endpoint.base_url}/chat/completions"
        where = public_url(url)
        last = ""
        for attempt in range(self.endpoint.retries + 1):
            if attempt:
                await asyncio.sleep(self.retry_backoff_s * 2 ** (attempt - 1))
            try:
                response = await client.post(url, json=payload)
            except httpx.TimeoutException as e:
                last = f"timed out after {self.endpoint.timeout_s:g}s ({type(e).__name__})"
                continue
            except httpx.TransportError as e:
                last = f"unreachable ({type(e).__name__}: {redact(str(e), key)})"
                continue
            if response.status_code in RETRY_STATUSES:
                last = f"HTTP {response.status_code}: {_error_text(response, key)}"
                continue
            if response.status_code in (401, 403):
                raise ModelEndpointError(
                    f"model endpoint {where} refused the key from {self.endpoint.api_key_env}: "
                    f"HTTP {response.status_code}: {_error_text(response, key)}",
                    environmental=True,
                    status=response.status_code,
                )
            if response.status_code >= 400:
                raise ModelEndpointError(
                    f"model endpoint {where} rejected the request: "
                    f"HTTP {response.status_code}: {_error_text(response, key)}",
                    environmental=False,
                    status=response.status_code,
                )
            try:
                body = response.json()
            except ValueError:
                raise ModelEndpointError(
                    f"model endpoint {where} answered HTTP {response.status_code} with non-JSON",
                    environmental=False,
                ) from None
            if not isinstance(body, dict):
                raise ModelEndpointError(
                    f"model endpoint {where} answered a JSON {type(body).__name__}, not an object",
                    environmental=False,
                )
            return body
        raise ModelEndpointError(
            f"model endpoint {where} failed after {self.endpoint.retries + 1} attempt(s): {last}",
            environmental=True,
        )


def _error_text(response: httpx.Response, key: str) -> str:
    try:
        detail = (response.json().get("error") or {}).get("message") or response.text
    except (ValueError, AttributeError):
        detail = response.text
    return redact(str(detail), key)[:300]


def _first_message(body: dict, key: str) -> dict:
    choices = body.get("choices")
    message = choices[0].get("message") if isinstance(choices, list) and choices else None
    if not isinstance(message, dict):
        raise ModelEndpointError(
            "model endpoint answered without choices[0].message: "
            + redact(json.dumps(body)[:200], key),
            environmental=False,
        )
    return message


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
