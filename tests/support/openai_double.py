"""A test double for a hosted model: an OpenAI-compatible Chat Completions server.

It is a real HTTP server on 127.0.0.1 (ephemeral port, one thread) that answers
`POST /v1/chat/completions` with scripted assistant messages, so model-backed adapters run
their real HTTP clients (httpx, the openai SDK inside Browser Use) end to end. Nothing about
the model is simulated beyond what a script says.

A script is either a callable `(request_json) -> message` or a list of messages (or callables)
consumed in order. A message is what the assistant says: `reply("text")`, `tool_call(...)`
messages, or any dict with `content` / `tool_calls`. A message may carry `usage` (prompt and
completion tokens) to override the default figures, or be an `HttpError` to answer with an
HTTP error instead. By default the prompt's tokens are counted from the request as a real
tokenizer counts them, at CHARS_PER_TOKEN (SmolLM2's rate on the harness's prompts, held
against the real llama.cpp server in tests/core/agents/test_local_model.py): a fixed figure
would teach the adapters' context budget a rate no server produces. A message may also carry
`delay_s` (the double waits that long before answering: a model still generating) and
`finish_reason`. With `strict=True` the double refuses what llama-cpp-python's server refused
(the server bundled before), with the very messages it answered this harness with (HTTP 500
with a pydantic validation error): an assistant turn whose `content` is null, and
`response_format` of type json_schema. Every request is recorded (path,
headers, parsed JSON body).
"""

from __future__ import annotations

import itertools
import json
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Message = dict[str, Any]
Script = Callable[[dict], "Message | HttpError"] | list[Any]

_ids = itertools.count(1)

# Characters of a request's messages and tools (as JSON) per prompt token: SmolLM2's tokenizer
# counted 3.2 to 3.6 on the openai_tools loop's prompts (its system prompt and tools, a page's
# text, a list of links) through llama.cpp's server.
CHARS_PER_TOKEN = 3.4


def prompt_tokens_of(body: dict) -> int:
    """The prompt tokens a real server would count for this request body, approximately."""
    chars = len(json.dumps(body.get("messages") or [], ensure_ascii=False))
    if body.get("tools"):
        chars += len(json.dumps(body["tools"], ensure_ascii=False))
    return max(1, math.ceil(chars / CHARS_PER_TOKEN))


@dataclass
class HttpError:
    """Answer a request with this status (and an OpenAI-style error body)."""

    status: int
    message: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # the parsed JSON body, or the raw text when it is not JSON

    @property
    def messages(self) -> list[dict]:
        return list((self.body or {}).get("messages") or []) if isinstance(self.body, dict) else []


def reply(content: str, **extra: Any) -> Message:
    """An assistant message with text content (no tool calls)."""
    return {"content": content, **extra}


def tool_call(name: str, arguments: dict | str | None = None, call_id: str | None = None) -> dict:
    """One entry of `tool_calls`; `arguments` as a string is sent verbatim (for bad JSON)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return {
        "id": call_id or f"call_{next(_ids)}",
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


def calls(*entries: dict, content: str | None = None, **extra: Any) -> Message:
    """An assistant message that calls tools."""
    return {"content": content, "tool_calls": list(entries), **extra}


def tool_results(request: dict) -> list[dict]:
    """The `tool` messages of a request, newest last, with their content parsed as JSON when
    it is JSON (adapters may truncate big results, which leaves plain text)."""
    out = []
    for m in request.get("messages") or []:
        if m.get("role") != "tool":
            continue
        content = m.get("content")
        try:
            parsed: Any = json.loads(content) if isinstance(content, str) else content
        except ValueError:
            parsed = content
        out.append({"tool_call_id": m.get("tool_call_id"), "content": parsed})
    return out


class OpenAIDouble:
    """A test double for a hosted model (see the module docstring). Use as a context manager:

    with OpenAIDouble([calls(tool_call("read_page")), reply("done")]) as model:
        ... point the adapter at model.base_url ...
        assert model.requests[0].headers["authorization"] == "Bearer ..."
    """

    def __init__(
        self,
        script: Script,
        *,
        model: str = "double-1",
        prompt_tokens: int | None = None,
        completion_tokens: int = 20,
        strict: bool = False,
    ) -> None:
        self._script = script
        self._queue: list[Any] | None = list(script) if isinstance(script, list) else None
        self.model = model
        self.strict = strict
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.requests: list[RecordedRequest] = []
        self.errors: list[str] = []  # scripts that raised or ran dry, for the test to see
        self.usage_sent: list[dict] = []  # the usage of every completion answered
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> OpenAIDouble:
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet test output
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                double._record(self, None)
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": double.model}]})
                else:
                    self._send(404, _error_body(f"no route GET {self.path}"))

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length).decode("utf-8", errors="replace")
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                double._record(self, body)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, _error_body(f"no route POST {self.path}"))
                    return
                status, payload, headers = double._answer(body if isinstance(body, dict) else {})
                self._send(status, payload, headers)

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="openai-double", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> OpenAIDouble:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as its base URL (it appends /chat/completions)."""
        if self._server is None:
            raise RuntimeError("the double is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    # -- what tests look at ------------------------------------------------------------------
    @property
    def completions(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.rstrip("/") == "/v1/chat/completions"]

    @property
    def tokens_sent(self) -> int:
        return sum(u["prompt_tokens"] + u["completion_tokens"] for u in self.usage_sent)

    # -- internals ---------------------------------------------------------------------------
    def _record(self, handler: BaseHTTPRequestHandler, body: Any) -> None:
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._lock:
            self.requests.append(RecordedRequest(handler.command, handler.path, headers, body))

    def _next_message(self, body: dict) -> Any:
        with self._lock:
            if self._queue is None:
                step: Any = self._script
            elif self._queue:
                step = self._queue.pop(0)
            else:
                raise LookupError("the script ran out of messages")
        return step(body) if callable(step) else step

    def _answer(self, body: dict) -> tuple[int, dict, dict]:
        refused = _llama_cpp_refusal(body) if self.strict else None
        if refused is not None:
            return 500, _error_body(refused, "internal_server_error"), {}
        try:
            message = self._next_message(body)
        except Exception as e:  # noqa: BLE001 - a broken script is reported, not raised
            self.errors.append(f"{type(e).__name__}: {e}")
            return 500, _error_body(f"test double script failed: {type(e).__name__}: {e}"), {}
        if isinstance(message, HttpError):
            return message.status, _error_body(message.message), message.headers
        message = dict(message)
        time.sleep(float(message.pop("delay_s", 0)))
        finish_reason = message.pop("finish_reason", None)
        usage = message.pop("usage", None) or {}
        counted = self.prompt_tokens if self.prompt_tokens is not None else prompt_tokens_of(body)
        prompt = int(usage.get("prompt_tokens", counted))
        completion = int(usage.get("completion_tokens", self.completion_tokens))
        tool_calls = message.get("tool_calls") or None
        usage_out = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        with self._lock:
            self.usage_sent.append(usage_out)
        out_message: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        if tool_calls:
            out_message["tool_calls"] = tool_calls
        return (
            200,
            {
                "id": f"chatcmpl-double-{next(_ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model") or self.model,
                "choices": [
                    {
                        "index": 0,
                        "message": out_message,
                        "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
                        "logprobs": None,
                    }
                ],
                "usage": usage_out,
            },
            {},
        )


def _error_body(message: str, kind: str = "test_double_error") -> dict:
    return {"error": {"message": message, "type": kind, "code": None}}


def _llama_cpp_refusal(body: dict) -> str | None:
    """What llama-cpp-python 0.3.36's server answered (HTTP 500) to a request it refuses, as
    it answered this harness (its messages, cut to their first error), or None."""
    for i, m in enumerate(body.get("messages") or []):
        if m.get("role") == "assistant" and m.get("content", "") is None:
            return (
                "7 validation errors:\n  {'type': 'string_type', 'loc': ('body', 'messages', "
                f"{i}, 'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input "
                "should be a valid string', 'input': None}"
            )
    if (body.get("response_format") or {}).get("type") == "json_schema":
        return (
            "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
            "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
            "'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}"
        )
    return None


def text_of(messages: Iterable[dict]) -> str:
    """All the text of a request's messages (string contents and text parts), for scripts that
    look for something the adapter sent the model."""
    parts: list[str] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [p.get("text", "") for p in content if isinstance(p, dict)]
    return "\n".join(parts)
