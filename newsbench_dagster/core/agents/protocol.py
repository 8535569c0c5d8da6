"""Agents and their manifests.

An agent version is described by a manifest file in `agents/` (name, version, adapter, channel,
model, prompt, parameters). The adapter names a module in this package that exposes
`create(manifest) -> Agent`, so adding an adapter is adding one module.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from newsbench_dagster.core.agents.tools import BrowserTools
from newsbench_dagster.core.config_file import load_config
from newsbench_dagster.core.errors import ConfigError


class AgentManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,63}$")
    version: str = Field(min_length=1)
    adapter: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    channel: Literal["main", "candidate"] = "candidate"
    model: str | None = None
    prompt: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    description: str | None = None

    @property
    def content_hash(self) -> str:
        """Hash of what makes the agent behave: adapter, model, prompt, parameters (not the
        channel or the description, so promoting a version does not make it another one)."""
        body = self.model_dump(include={"name", "version", "adapter", "model", "prompt", "params"})
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    @property
    def agent_version(self) -> str:
        """The partition key of this version: `name@version+hash`, so a manifest edited
        without bumping its version is still a new version."""
        return f"{self.name}@{self.version}+{self.content_hash[:8]}"

    @property
    def prompt_hash(self) -> str | None:
        return hashlib.sha256(self.prompt.encode()).hexdigest()[:12] if self.prompt else None


class AgentTask(BaseModel):
    """What an agent is told: never the checks, the reward or the ground truth (blind labels)."""

    id: str
    intent: str
    entry_url: str
    inputs: dict[str, Any]
    constraints: dict[str, Any]
    answer_format: dict[str, str] = Field(default_factory=dict)  # the answer's fields

    @classmethod
    def from_task(cls, task: dict) -> AgentTask:
        fields = {k: task[k] for k in ("id", "intent", "entry_url", "inputs", "constraints")}
        return cls(**fields, answer_format=task.get("answer_format") or {})


class Agent(Protocol):
    """What the runner drives. `manifest` and `run` are required; the hooks below are
    optional (an agent without them gets the defaults), and the runner reads them only
    through `needs_cdp`, `settings_of`, `serving`, `parallel_runs`, `outputs_of` and
    `secrets_of`, so this class lists every hook there is.

    * `needs_cdp: bool` -- the agent brings its own browser logic and attaches over CDP: the
      runner gives it a Chromium of its own, reached through the guarded endpoint in
      `tools.cdp_url` (default False).
    * `describe() -> dict` -- the adapter's settings, recorded in the run's environment
      manifest (model, endpoint without credentials, versions...).
    * `serve()` -- an async context manager the runner enters around a batch of runs (a
      local model's server, shared by the batch and stopped after).
    * `parallel_runs: int` -- how many of its runs may work at once (a local model that
      serves one request at a time: 1, so no run's time budget is spent waiting for another).
    * `run_outputs(tools) -> dict` -- what the adapter kept of its agent, whatever happened
      to the run: bytes or text become artifacts, anything else the run row's `adapter`
      field. Stored, never trusted.
    * `secrets() -> dict[str, str]` -- the secret values the agent is given (name -> value,
      read from the environment when called: a command's `${NAME}` references, a model
      endpoint's key), which the harness redacts from everything the run leaves
      (core.secrets).
    """

    manifest: AgentManifest

    async def run(self, task: AgentTask, tools: BrowserTools) -> None:
        """Work on the task in the page behind `tools`; answer with `tools.answer(...)`."""


def needs_cdp(agent: Agent) -> bool:
    return bool(getattr(agent, "needs_cdp", False))


def settings_of(agent: Agent) -> dict[str, Any]:
    describe = getattr(agent, "describe", None)
    return describe() if describe else {}


def serving(agent: Agent) -> contextlib.AbstractAsyncContextManager:
    """The agent's `serve()` hook, entered by the runner around a batch (a local model's
    server for all its runs), or nothing."""
    serve = getattr(agent, "serve", None)
    return serve() if serve else contextlib.nullcontext()


def parallel_runs(agent: Agent) -> int | None:
    """How many of the agent's runs may work at once (`parallel_runs`; None: the pool's)."""
    return getattr(agent, "parallel_runs", None)


def outputs_of(agent: Agent, tools: BrowserTools) -> dict[str, Any]:
    outputs = getattr(agent, "run_outputs", None)
    return (outputs(tools) or {}) if outputs else {}


def secrets_of(agents: Iterable[Agent]) -> dict[str, str]:
    """The secret values of a batch's agents (name -> value), in one place: every run of
    the batch is redacted of all of them (one agent's key has no business in another's run
    either)."""
    out: dict[str, str] = {}
    for agent in agents:
        secrets = getattr(agent, "secrets", None)
        for name, value in ((secrets() or {}) if secrets else {}).items():
            out.setdefault(name, value)
    return out


ADAPTERS = "newsbench_dagster.core.agents.adapters"


def build_agent(manifest: AgentManifest) -> Agent:
    """The agent a manifest describes, from the adapter module its `adapter:` names."""
    name = f"{ADAPTERS}.{manifest.adapter}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name:  # the adapter exists but something it needs is not installed
            raise
        raise ConfigError(
            f"agent {manifest.agent_version}: unknown adapter {manifest.adapter!r} "
            f"(no module {name})"
        ) from e
    return module.create(manifest)


def load_manifest(path: str | Path) -> AgentManifest:
    return load_config(path, AgentManifest)


def load_manifests(directory: str | Path) -> list[AgentManifest]:
    manifests = [load_manifest(p) for p in sorted(Path(directory).glob("*.yaml"))]
    seen: dict[str, int] = {}
    for m in manifests:
        seen[m.agent_version] = seen.get(m.agent_version, 0) + 1
    dupes = [v for v, n in seen.items() if n > 1]
    if dupes:
        raise ConfigError(f"{directory}: agent versions declared twice: {', '.join(dupes)}")
    return manifests
