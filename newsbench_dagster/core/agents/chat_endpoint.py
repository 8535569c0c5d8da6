"""A model-backed agent's Chat Completions endpoint, shared by both model adapters: where it
is (a URL, or a local model the harness serves), its key, and the caps the harness enforces
on every call whatever the server does.

Whose fault a failed call is, decided here once:
* the endpoint unreachable, down, rate-limited or refusing the key: the environment's
  (`ModelEndpointError`, fault "environment": the run is excluded as `model_unavailable`);
* the endpoint refusing the request *we* built (a 4xx, or a 5xx whose body is a validation
  error of the request, as llama-cpp-python answers): the harness's (fault "harness",
  `harness_error`, loud), never the agent's nor the environment's;
* a call that ran past its wall-clock cap while the server was up (still generating), or
  generated past its completion-token cap: the agent's `runaway_output`; a request refused
  because the conversation outgrew the model's context: the agent's `context_overflow`
  (`ModelOutputFailure`).

Manifest `params` read here: base_url (or local_model: core.agents.local_model), api_key_env
(default OPENAI_API_KEY), temperature (0), timeout_s (the wall-clock cap of one model call,
default 60), max_completion_tokens (the completion-token cap of one call, default 512, sent
as `max_tokens`), retries (2, on a connection error, 429 or 5xx), headers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

import httpx

from newsbench_dagster.core import input_files
from newsbench_dagster.core.agents.local_model import LOCAL_KEY, LocalModel, LocalModelServer
from newsbench_dagster.core.agents.protocol import AgentManifest
from newsbench_dagster.core.errors import ConfigError, ModelEndpointError, ModelOutputFailure
from newsbench_dagster.core.secrets import Redactor
from newsbench_dagster.core.web.network import async_client

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
# How servers word a request that did not validate (pydantic in llama-cpp-python and vLLM,
# FastAPI, OpenAI's "invalid_request_error") and a prompt over the context window.
VALIDATION_ERROR = re.compile(
    r"validation error|invalid_request|Input should be|Field required|Extra inputs", re.I
)
CONTEXT_EXCEEDED = re.compile(
    # OpenAI's and vLLM's wording, and llama.cpp's ("exceeds the available context size").
    r"context[_ ]length|context window|maximum context|"
    r"exceeds? (the )?(available |model'?s? )?context|"
    r"too many tokens|prompt is too long",
    re.I,
)


def public_url(url: str) -> str:
    """The URL without credentials or query (either could carry a key)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


@dataclass(frozen=True)
class Endpoint:
    """Where a model-backed adapter's model lives and the caps of each call, from its
    manifest (both adapters)."""

    base_url: str
    api_key_env: str
    temperature: float
    timeout_s: float
    retries: int
    headers: dict[str, str]
    max_completion_tokens: int = 512
    local: LocalModel | None = field(default=None)

    @classmethod
    def of(cls, manifest: AgentManifest, base_dir: str = ".") -> Endpoint:
        """The manifest's endpoint, or a ConfigError naming the agent and the field."""
        p, who = manifest.params, f"agent {manifest.agent_version}"
        if not manifest.model:
            raise ConfigError(f"{who}: {manifest.adapter} needs `model`")
        local = LocalModel.of(p, who, base_dir)
        if local is None and (
            not isinstance(p.get("base_url"), str) or not p["base_url"].startswith("http")
        ):
            raise ConfigError(
                f"{who}: {manifest.adapter} needs params.base_url (http...) or params.local_model"
            )
        try:
            endpoint = cls(
                base_url=(p.get("base_url") or "http://127.0.0.1").rstrip("/"),
                api_key_env=p.get("api_key_env", "OPENAI_API_KEY"),
                temperature=float(p.get("temperature", 0.0)),
                timeout_s=float(p.get("timeout_s", 60.0)),
                retries=int(p.get("retries", 2)),
                headers={str(k): str(v) for k, v in (p.get("headers") or {}).items()},
                max_completion_tokens=int(p.get("max_completion_tokens", 512)),
                local=local,
            )
        except (TypeError, ValueError) as e:
            raise ConfigError(f"{who}: a number in params is not a number ({e})") from None
        if endpoint.timeout_s <= 0 or endpoint.max_completion_tokens < 1:
            raise ConfigError(f"{who}: params.timeout_s and max_completion_tokens must be > 0")
        if any(k.lower() == "authorization" for k in endpoint.headers):
            raise ConfigError(
                f"{who}: the key comes from {endpoint.api_key_env}, not from params.headers"
            )
        return endpoint

    def key(self) -> str:
        """The key, read from the environment when a run starts (never at import)."""
        if self.local is not None:
            return LOCAL_KEY
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ModelEndpointError(
                f"the model key is not set: environment variable {self.api_key_env} is empty",
                fault="environment",
            )
        return key

    def secrets(self) -> dict[str, str]:
        """The key as a secret to redact (name -> value), when it is set and not a local
        model's (which is no secret)."""
        if self.local is not None or not os.environ.get(self.api_key_env):
            return {}
        return {self.api_key_env: os.environ[self.api_key_env]}

    def redactor(self, key: str) -> Redactor:
        """What redacts `key` (and its encodings) from a call's error texts."""
        return Redactor({} if self.local is not None else {self.api_key_env: key})


class ChatEndpoint:
    """An agent's endpoint at run time: the local server it serves (if any) and the call."""

    def __init__(self, endpoint: Endpoint, retry_backoff_s: float = 1.0) -> None:
        self.endpoint = endpoint
        self.retry_backoff_s = retry_backoff_s
        self.server: LocalModelServer | None = None
        self.start_error: str | None = None  # why the local server did not start
        self.warm_up_s: float | None = None  # seconds the local server took to read the prompt

    @property
    def base_url(self) -> str:
        return self.server.base_url if self.server is not None else self.endpoint.base_url

    @property
    def loopback(self) -> bool:
        return urlsplit(self.base_url).hostname in ("127.0.0.1", "localhost", "::1")

    def describe(self) -> dict:
        e = self.endpoint
        where = (
            {"local_model": e.local.alias, **self._server_info(), "warm_up_s": self.warm_up_s}
            if e.local is not None
            else {"base_url": public_url(e.base_url), "api_key_env": e.api_key_env}
        )
        return {
            **where,
            "temperature": e.temperature,
            "timeout_s": e.timeout_s,
            "max_completion_tokens": e.max_completion_tokens,
        }

    def _server_info(self) -> dict:
        return self.server.describe() if self.server is not None else {}

    @contextlib.asynccontextmanager
    async def serve(self) -> AsyncIterator[None]:
        """For a batch of runs: the local model's server started (and stopped after), shared
        by every run; nothing to do for an endpoint elsewhere."""
        if self.endpoint.local is None or self.server is not None:
            yield
            return
        server = LocalModelServer(self.endpoint.local)
        try:
            await server.start()
        except ModelEndpointError as e:
            # Every run of the batch ends as model_unavailable, saying why; other agents run.
            self.start_error = str(e)
            try:
                yield
            finally:
                self.start_error = None
            return
        self.server = server
        try:
            yield
        finally:
            self.server = None
            await server.close()

    async def warm_up(self, payload: dict, timeout_s: float = 180.0) -> float | None:
        """One call to the local server before any run, so it has read what every call starts
        with; its seconds, or None when it failed (the runs then show why). Never charged to
        a run."""
        if self.server is None:
            return None
        began = asyncio.get_running_loop().time()
        async with self.turn(), async_client(timeout=timeout_s) as c:
            try:
                response = await c.post(f"{self.base_url}/chat/completions", json=payload)
            except httpx.HTTPError:
                return None
        if response.status_code != 200:
            return None
        self.warm_up_s = round(asyncio.get_running_loop().time() - began, 2)
        return self.warm_up_s

    def client(self, key: str) -> httpx.AsyncClient:
        """One run's HTTP client: the key in the Authorization header only; the transport's
        own timeout is past the call's cap, so the cap is what fires."""
        if self.start_error is not None:
            raise ModelEndpointError(self.start_error, fault="environment")
        if self.endpoint.local is not None and self.server is None:
            raise ModelEndpointError(
                "the local model's server is not running: the runner starts it for a batch "
                "(Agent.serve); run the agent through the runner",
                fault="harness",
            )
        headers = {**self.endpoint.headers, "Authorization": f"Bearer {key}"}
        # Proxy settings from the environment apply to a real endpoint, never to loopback.
        return async_client(
            headers=headers, timeout=self.endpoint.timeout_s + 10, trust_env=not self.loopback
        )

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Calls to a local server take turns (it serves one at a time), so a call's cap
        starts once it holds the server, and a server left stale by a call stopped mid-way
        is restarted first. A restart that fails is the environment's (ModelEndpointError)."""
        server = self.server
        if server is None:
            yield
            return
        async with server.lock:
            if server.stale:
                await server.recover()
            try:
                yield
            except asyncio.CancelledError:
                # The run's budget ran out mid-call: the server goes on generating for nobody.
                server.stale = True
                raise

    async def complete(self, client: httpx.AsyncClient, payload: dict, secrets: Redactor) -> dict:
        """POST /chat/completions under the call's caps; the response body, or one of the
        errors in this module's docstring."""
        url = f"{self.base_url}/chat/completions"
        where, cap = public_url(url), self.endpoint.timeout_s
        last = ""
        for attempt in range(self.endpoint.retries + 1):
            if attempt:
                await asyncio.sleep(self.retry_backoff_s * 2 ** (attempt - 1))
            async with self.turn():
                try:
                    response = await asyncio.wait_for(client.post(url, json=payload), cap)
                except TimeoutError:
                    failure = await self.overran()
                    if isinstance(failure, ModelOutputFailure):
                        raise failure from None
                    last = str(failure)
                    continue
                except httpx.TransportError as e:
                    last = f"unreachable ({type(e).__name__}: {secrets.text(str(e))})"
                    continue
            status, text = response.status_code, _error_text(response, secrets)
            if status >= 400:
                failure = refusal(status, text, where, self.endpoint.api_key_env)
                if failure is not None:
                    raise failure
                last = f"HTTP {status}: {text}"
                continue
            return _body(response, where)
        raise ModelEndpointError(
            f"model endpoint {where} failed after {self.endpoint.retries + 1} attempt(s): {last}",
            fault="environment",
        )

    async def overran(self) -> Exception:
        """What a call that ran past its wall-clock cap means: with the server up (the
        local process running, or the endpoint answering its model list at all), the model
        was still generating, the agent's `runaway_output` (a local server is restarted: it
        would go on); with the server gone, the environment's failure."""
        cap = self.endpoint.timeout_s
        if self.server is not None:
            alive = self.server.alive()
        else:
            alive = False
            with contextlib.suppress(httpx.HTTPError):
                async with async_client(timeout=5, trust_env=not self.loopback) as c:
                    await c.get(f"{self.base_url}/models")
                    alive = True
        if not alive:
            return ModelEndpointError(
                f"a model call timed out after {cap:g}s and the server then did not answer a "
                "health check",
                fault="environment",
            )
        if self.server is not None:
            await self.server.recover()
        return ModelOutputFailure(
            "runaway_output",
            f"a model call ran past its {cap:g}s cap (timeout_s) while the server was up: the "
            "model was still generating",
        )


def context_filled_up(completion: int, cap: int, prompt_tokens: int) -> ModelEndpointError:
    """A reply cut at "length" with fewer tokens than its cap: the context filled up (llama.cpp
    answers a prompt that leaves less room than max_tokens with 200 and stops at the context's
    end). The prompt the harness built left the model no room: ours, not the model's."""
    return ModelEndpointError(
        f"the model's context filled up after {completion} completion tokens of its {cap}-token "
        f"cap (prompt {prompt_tokens} tokens): the prompt Newsbench built left it no room",
        fault="harness",
    )


def refusal(status: int, text: str, where: str, key_env: str) -> Exception | None:
    """What an HTTP error of the endpoint means (this module's docstring), or None when it is
    worth another attempt (429, 5xx)."""
    if CONTEXT_EXCEEDED.search(text):
        return ModelOutputFailure(
            "context_overflow",
            f"model endpoint {where} refused the conversation as longer than the model's "
            f"context: HTTP {status}: {text}",
        )
    if status in (401, 403):
        return ModelEndpointError(
            f"model endpoint {where} refused the key from {key_env}: HTTP {status}: {text}",
            fault="environment",
            status=status,
        )
    if (status >= 500 and VALIDATION_ERROR.search(text)) or (
        400 <= status < 500 and status not in RETRY_STATUSES
    ):
        return ModelEndpointError(
            f"model endpoint {where} refused the request Newsbench built (a harness bug, not "
            f"the model's or the server's failure): HTTP {status}: {text}",
            fault="harness",
            status=status,
        )
    return None


def _body(response: httpx.Response, where: str) -> dict:
    try:
        body = input_files.loads(response.content, "the reply")
    except ValueError:
        raise ModelEndpointError(
            f"model endpoint {where} answered HTTP {response.status_code} with non-JSON",
            fault="agent",
        ) from None
    if not isinstance(body, dict):
        raise ModelEndpointError(
            f"model endpoint {where} answered a JSON {type(body).__name__}, not an object",
            fault="agent",
        )
    return body


def _error_text(response: httpx.Response, secrets: Redactor) -> str:
    if response.status_code < 400:
        return ""
    try:
        detail = (response.json().get("error") or {}).get("message") or response.text
    except (ValueError, AttributeError):
        detail = response.text
    return secrets.text(str(detail))[:300]


def first_message(body: dict, secrets: Redactor) -> tuple[dict, str | None]:
    """The first choice's message and finish reason; the agent's failure when there is none."""
    choices = body.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise ModelEndpointError(
            "model endpoint answered without choices[0].message: "
            + secrets.text(json.dumps(body))[:200],
            fault="agent",
        )
    return message, first.get("finish_reason")
