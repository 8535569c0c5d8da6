"""Agents and their manifests.

An agent version is described by a manifest file in `agents/` (name, version, adapter, channel,
model, prompt, parameters). The adapter names a module in this package that exposes
`create(manifest) -> Agent`, so adding an adapter is adding one module.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml
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


def adapter_exists(adapter: str) -> bool:
    """Whether `adapter:` names a module of the adapters package (without importing it)."""
    return importlib.util.find_spec(f"{ADAPTERS}.{adapter}") is not None


def load_manifest(path: str | Path) -> AgentManifest:
    return load_config(path, AgentManifest)


def load_manifests(directory: str | Path) -> list[AgentManifest]:
    """Every manifest of the directory, strictly: the first broken one is an error (the
    pipeline and the sensor use `scan_manifests`, which sets broken ones aside)."""
    manifests = [load_manifest(p) for p in sorted(Path(directory).glob("*.yaml"))]
    seen: dict[str, int] = {}
    for m in manifests:
        seen[m.agent_version] = seen.get(m.agent_version, 0) + 1
    dupes = [v for v, n in seen.items() if n > 1]
    if dupes:
        raise ConfigError(f"{directory}: agent versions declared twice: {', '.join(dupes)}")
    return manifests


@dataclass(frozen=True)
class BrokenManifest:
    """A manifest file that cannot be used, and why (`error` names the file)."""

    path: Path
    error: str
    channel: str | None  # what its text declares (None: unreadable, so maybe `main`)
    name: str | None

    @property
    def maybe_main(self) -> bool:
        return self.channel in ("main", None)


@dataclass(frozen=True)
class ManifestScan:
    """A manifest directory: the usable manifests, and the broken ones set aside."""

    directory: Path
    manifests: list[AgentManifest]
    broken: list[BrokenManifest]

    def broken_files(self) -> str:
        return ", ".join(b.path.name for b in self.broken)

    def warnings(self) -> list[str]:
        """One line per broken manifest naming its file and error; loud for a main agent."""
        lead = {
            "main": "BROKEN MAIN-CHANNEL agent manifest skipped, its runs are missing: ",
            None: "broken agent manifest skipped (unreadable: it may be a main-channel agent): ",
        }
        other = "broken agent manifest skipped: "
        return [lead.get(b.channel, other) + b.error for b in self.broken]


_DECLARED = re.compile(r"^(channel|name):[ \t]*['\"]?([A-Za-z0-9_.@-]+)", re.MULTILINE)


def _declared(path: Path) -> tuple[str | None, str | None]:
    """(channel, name) as a broken manifest's text declares them at top level, read by a
    pattern (a broken file may not parse); the channel defaults as the model's does."""
    try:
        text = path.read_bytes()[:65536].decode("utf-8", errors="replace")
    except OSError:
        return None, None
    found = dict(m.groups() for m in _DECLARED.finditer(text))
    if "channel" not in found and "name" not in found and ":" not in text:
        return None, None  # not a mapping at all: nothing can be said
    return found.get("channel", "candidate"), found.get("name")


def _one_line(e: ConfigError, path: Path) -> str:
    """A manifest's error on one line: YAML's own is a multi-line excerpt of the file."""
    cause = e.__cause__
    mark = getattr(cause, "problem_mark", None)
    if isinstance(cause, yaml.YAMLError) and mark is not None:
        what = getattr(cause, "problem", None) or "invalid"
        return f"{path}: not valid YAML: line {mark.line + 1}, column {mark.column + 1}: {what}"
    return " ".join(str(e).split())


def scan_manifests(directory: str | Path) -> ManifestScan:
    """Every manifest of the directory that can be used; a broken one (unreadable, invalid
    YAML, a missing or invalid field, an unknown adapter, a version another file declares
    first) is set aside with its error instead of failing the others."""
    directory = Path(directory)
    good: list[AgentManifest] = []
    broken: list[BrokenManifest] = []
    first: dict[str, Path] = {}
    for path in sorted(directory.glob("*.yaml")):
        try:
            m = load_manifest(path)
        except ConfigError as e:
            broken.append(BrokenManifest(path, _one_line(e, path), *_declared(path)))
            continue
        except OSError as e:
            broken.append(BrokenManifest(path, f"{path}: {e.strerror or e}", None, None))
            continue
        if not adapter_exists(m.adapter):
            error = (
                f"{path}: adapter: unknown adapter {m.adapter!r} (no module {ADAPTERS}.{m.adapter})"
            )
        elif m.agent_version in first:
            error = f"{path}: declares {m.agent_version}, as {first[m.agent_version].name} does"
        else:
            first[m.agent_version] = path
            good.append(m)
            continue
        broken.append(BrokenManifest(path, error, m.channel, m.name))
    return ManifestScan(directory, good, broken)
