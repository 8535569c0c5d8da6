"""The `command` adapter: any command-line agent, attached to the run's browser over CDP.

The manifest names an argv list (never a shell string); each element may hold placeholders:

    {prompt}       the task as a person would ask it (task.inputs["prompt"])
    {url}          the entry URL (the harness's page is already there)
    {cdp_url}      http://127.0.0.1:PORT of the run's Chromium (/json/version, websocket CDP)
    {answer_file}  a fresh path the agent writes its JSON answer to
    {task_file}    the AgentTask as JSON (id, intent, entry_url, inputs, constraints)
    {task_id}      the task id; {run_id} the run id (tools.run_id, set by the runner)
    {intent}       the task's intent
    {python}       the harness's Python interpreter
    {{ and }}      literal braces

The answer is the answer file (a JSON object, or a list of objects = several answers in order;
a boolean "claims_success" key in an object is the agent's claim and is not part of the value),
else the last line of stdout that is a JSON object. What the command printed is kept, capped
and with secrets redacted, and handed to the runner by `run_outputs(tools)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import uuid
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from newsbench_dagster.core import input_files
from newsbench_dagster.core.agents.protocol import AgentManifest, AgentTask
from newsbench_dagster.core.agents.stream_capture import StreamCapture
from newsbench_dagster.core.agents.tools import BrowserTools, BudgetExceeded
from newsbench_dagster.core.errors import ConfigError
from newsbench_dagster.core.secrets import Redactor

PLACEHOLDERS = frozenset(
    {"prompt", "url", "cdp_url", "answer_file", "task_file", "task_id", "run_id", "intent"}
    | {"python"}  # the harness's interpreter, for agents written in Python
)
ANSWER_MODES = ("auto", "file", "stdout")
DRAIN_TIMEOUT_S = 2.0  # after the kill, how long to wait for the pipes to close
SHOWN = 200  # characters of offending text quoted in an error
# What a command inherits from the harness: enough to find programs and write caches; never
# the harness's own credentials (those reach an agent only through `env` and ${NAME}).
INHERITED_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "VIRTUAL_ENV",
    "PLAYWRIGHT_BROWSERS_PATH",
    "XDG_CACHE_HOME",
)
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CommandAgentError(Exception):
    """The command failed as an agent: it could not start, exited non-zero, or answered
    something that is not an answer. The runner records it as the agent's error."""


@dataclass(frozen=True)
class CommandParams:
    command: tuple[str, ...]
    timeout_s: float | None = None
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    answer: str = "auto"
    inherit_env: bool = False

    @classmethod
    def parse(cls, manifest: AgentManifest) -> CommandParams:
        where = f"agent {manifest.agent_version}"
        p = dict(manifest.params)
        unknown = sorted(set(p) - {"command", "timeout_s", "env", "cwd", "answer", "inherit_env"})
        if unknown:
            raise ConfigError(f"{where}: unknown params {unknown}")
        command = p.get("command")
        if isinstance(command, str):
            raise ConfigError(
                f"{where}: params.command must be a list of arguments, not a string "
                f"({command[:SHOWN]!r}); commands never run through a shell"
            )
        if (
            not isinstance(command, list)
            or not command
            or not all(isinstance(a, str) for a in command)
        ):
            raise ConfigError(f"{where}: params.command must be a non-empty list of strings")
        bad = sorted({name for arg in command for name in _fields(arg)} - PLACEHOLDERS)
        if bad:
            raise ConfigError(
                f"{where}: unknown placeholders {', '.join('{' + b + '}' for b in bad)} in "
                f"params.command (known: {', '.join(sorted(PLACEHOLDERS))})"
            )
        timeout = p.get("timeout_s")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ConfigError(f"{where}: params.timeout_s must be a positive number")
        env = p.get("env") or {}
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and _ENV_NAME.match(k) and isinstance(v, str | int | float)
            for k, v in env.items()
        ):
            raise ConfigError(f"{where}: params.env must map variable names to strings")
        answer = p.get("answer", "auto")
        if answer not in ANSWER_MODES:
            raise ConfigError(f"{where}: params.answer must be one of {', '.join(ANSWER_MODES)}")
        cwd = p.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ConfigError(f"{where}: params.cwd must be a path")
        return cls(
            command=tuple(command),
            timeout_s=float(timeout) if timeout is not None else None,
            env={k: str(v) for k, v in env.items()},
            # Relative to the project (the runner's base_dir), resolved when a run starts.
            cwd=Path(cwd) if cwd is not None else None,
            answer=answer,
            inherit_env=bool(p.get("inherit_env", False)),
        )


_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _fields(arg: str) -> list[str]:
    """The placeholder names in one argument. Only `{identifier}` is a placeholder, so JSON
    or code in an argument keeps its braces; `{{name}}` is a literal `{name}`."""
    return [m.group(1) for m in _PLACEHOLDER.finditer(arg) if m.group(1)]


def substitute(arg: str, values: dict[str, str]) -> str:
    """One argv element with its placeholders replaced; the value is inserted as-is, one
    argument, never re-parsed (no shell: `; rm -rf` or `$(...)` stay literal)."""

    def fill(m: re.Match) -> str:
        token = m.group(0)
        if token in ("{{", "}}"):
            return token[0]
        return values[m.group(1)]

    return _PLACEHOLDER.sub(fill, arg)


def _quote(text: str) -> str:
    return repr(text[:SHOWN] + ("..." if len(text) > SHOWN else ""))


def parse_answers(text: str, source: str) -> list[tuple[dict[str, Any], bool]]:
    """Answers from JSON text: an object, or a list of objects in order. A boolean
    "claims_success" in an object is the claim (default true), not part of the value."""
    try:
        value = input_files.loads(text)
    except ValueError as e:
        raise CommandAgentError(f"{source} is not valid JSON ({e}): {_quote(text)}") from None
    items = value if isinstance(value, list) else [value]
    if not items:
        raise CommandAgentError(f"{source} holds an empty list: no answer")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            what = f"item {i} of " if isinstance(value, list) else ""
            raise CommandAgentError(
                f"{what}{source} is not a JSON object: {_quote(json.dumps(item))}"
            )
        item = dict(item)
        claim = item.pop("claims_success", True)
        if not isinstance(claim, bool):
            raise CommandAgentError(f"{source}: claims_success must be true or false: {claim!r}")
        out.append((item, claim))
    return out


def last_json_line(stdout: str) -> str | None:
    """The last line of the output that is a JSON object (agents log before they answer)."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                if isinstance(input_files.loads(line), dict):
                    return line
            except ValueError:
                continue
    return None


def _kill_group(pid: int) -> None:
    # The command leads its own process group (start_new_session): this reaches whatever it
    # spawned too, so nothing outlives the run.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class CommandAgent:
    needs_cdp = True  # the runner hands these adapters tools.cdp_url

    def __init__(self, manifest: AgentManifest) -> None:
        self.manifest = manifest
        self.params = CommandParams.parse(manifest)
        # One agent serves concurrent runs: what each run's command printed, by its tools.
        self._outputs: weakref.WeakKeyDictionary[BrowserTools, dict[str, Any]] = (
            weakref.WeakKeyDictionary()
        )

    def describe(self) -> dict[str, Any]:
        """The settings the runner records with each run (env names only: values may be
        secrets)."""
        p = self.params
        return {
            "command": list(p.command),
            "timeout_s": p.timeout_s,
            "env": sorted(p.env),
            "cwd": str(p.cwd) if p.cwd else None,
            "answer": p.answer,
            "inherit_env": p.inherit_env,
        }

    def run_outputs(self, tools: BrowserTools) -> dict[str, Any]:
        """What the run's command left, for the runner to keep: `command_stdout.txt` and
        `command_stderr.txt` (bytes: artifacts) and `command` (argv, pid, exit code, killed,
        seconds, answer source, error: a dict for the row). Capped and redacted."""
        return self._outputs.pop(tools, {})

    def secrets(self) -> dict[str, str]:
        """The values its `${NAME}` references stand for now (name -> value): the harness
        redacts them from everything the run leaves (core.secrets)."""
        names = {n for v in self.params.env.values() for n in _ENV_REF.findall(v)}
        return {n: os.environ[n] for n in sorted(names) if os.environ.get(n)}

    def _env(self) -> tuple[dict[str, str], Redactor]:
        """The child's environment, and the redactor of the values that came from ${NAME}
        (secrets)."""
        base = dict(os.environ) if self.params.inherit_env else {}
        if not self.params.inherit_env:
            base.update({k: os.environ[k] for k in INHERITED_ENV if k in os.environ})
        # The CDP endpoint is on loopback: never through a proxy the harness may have set.
        base["NO_PROXY"] = base["no_proxy"] = "127.0.0.1,localhost"
        secrets: dict[str, str] = {}
        missing: list[str] = []

        def resolve(m: re.Match) -> str:
            name = m.group(1)
            if name not in os.environ:
                missing.append(name)
                return ""
            if os.environ[name]:
                secrets[name] = os.environ[name]
            return os.environ[name]

        for key, value in self.params.env.items():
            base[key] = _ENV_REF.sub(resolve, value)
        if missing:
            raise CommandAgentError(
                f"environment variables not set for params.env: {', '.join(sorted(missing))}"
            )
        return base, Redactor(secrets)

    def _cwd(self, tools: BrowserTools) -> Path | None:
        """The command's directory: `params.cwd` relative to the project (the directory
        the runner names in `tools.base_dir`, else the working directory)."""
        if self.params.cwd is None:
            return None
        return (Path(tools.base_dir or ".") / self.params.cwd).resolve()

    async def run(self, task: AgentTask, tools: BrowserTools) -> None:
        if not tools.cdp_url:
            raise CommandAgentError("no CDP endpoint: the runner did not set tools.cdp_url")
        env, secrets = self._env()
        kept = self._outputs[tools] = {}
        workdir = Path(tempfile.mkdtemp(prefix="nb-command-"))
        answer_file, task_file = workdir / "answer.json", workdir / "task.json"
        task_file.write_text(task.model_dump_json(indent=1), encoding="utf-8")
        values = {
            "prompt": str(task.inputs.get("prompt") or task.intent),
            "url": task.entry_url,
            "cdp_url": tools.cdp_url,
            "answer_file": str(answer_file),
            "task_file": str(task_file),
            "task_id": task.id,
            # The runner's run id; outside the runner, one unique to this execution.
            "run_id": getattr(tools, "run_id", None) or f"{task.id}.{uuid.uuid4().hex[:8]}",
            "intent": task.intent,
            "python": sys.executable,
        }
        argv = [substitute(a, values) for a in self.params.command]
        cwd = self._cwd(tools)
        record: dict[str, Any] = {
            "argv": [secrets.text(a) for a in argv],
            "cwd": str(cwd) if cwd else None,
            "pid": None,
            "exit_code": None,
            "killed": None,
            "seconds": None,
            "answer_source": None,
            "error": None,
        }
        out, err = StreamCapture(), StreamCapture()
        started, first_step, t0 = time.perf_counter(), len(tools.trajectory.steps), tools.elapsed()
        try:
            try:
                await self._execute(argv, env, cwd, out, err, record)
            except (asyncio.CancelledError, BudgetExceeded):
                # Stopped for time (its own timeout_s, or the runner's budget): what it had
                # answered by then still counts.
                with contextlib.suppress(CommandAgentError):
                    await self._answer(tools, answer_file, out, err, secrets, record, final=False)
                raise
            await self._answer(tools, answer_file, out, err, secrets, record)
        except CommandAgentError as e:
            # The runner records the message as is: it must not carry a secret either.
            record["error"] = secrets.text(str(e))
            raise CommandAgentError(record["error"]) from None
        except BaseException as e:
            record["error"] = secrets.text(f"{type(e).__name__}: {e}")
            raise
        finally:
            record["seconds"] = round(time.perf_counter() - started, 3)
            kept["command_stdout.txt"] = out.text(secrets)
            kept["command_stderr.txt"] = err.text(secrets)
            kept["command"] = record
            shutil.rmtree(workdir, ignore_errors=True)
            # One trajectory entry for the whole command, before the answers it gave: what ran
            # and how it ended. Not a budgeted step (the budget is the command's time).
            tools.trajectory.steps.insert(
                first_step,
                {
                    "tool": "command",
                    "args": {"argv": record["argv"]},
                    "t": round(t0, 3),
                    "status": "error" if record["error"] else "ok",
                    "latency_ms": round(record["seconds"] * 1000, 1),
                    "exit_code": record["exit_code"],
                    "killed": record["killed"],
                    **({"error": record["error"]} if record["error"] else {}),
                },
            )

    async def _execute(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path | None,
        out: StreamCapture,
        err: StreamCapture,
        record: dict,
    ) -> None:
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
        except FileNotFoundError:
            if cwd is not None and not cwd.is_dir():
                raise CommandAgentError(f"params.cwd {str(cwd)!r} does not exist") from None
            raise CommandAgentError(
                f"cannot start the command: {argv[0]!r} not found (looked up on PATH: "
                f"{env.get('PATH', '')!r})"
                if os.sep not in argv[0]
                else f"cannot start the command: {argv[0]!r} not found"
            ) from None
        except PermissionError:
            raise CommandAgentError(
                f"cannot start the command: {argv[0]!r} is not executable"
            ) from None
        record["pid"] = proc.pid
        assert proc.stdout is not None and proc.stderr is not None
        readers = [
            asyncio.create_task(out.read(proc.stdout)),
            asyncio.create_task(err.read(proc.stderr)),
        ]
        record["killed"] = False
        try:
            await asyncio.wait_for(proc.wait(), self.params.timeout_s)
        except TimeoutError:
            record["killed"] = True
            raise BudgetExceeded(
                f"command exceeded its timeout_s={self.params.timeout_s:g} and was killed"
            ) from None
        except asyncio.CancelledError:
            record["killed"] = True
            raise
        finally:
            _kill_group(proc.pid)
            # Reap it even if cancelled: a zombie or an orphan must not outlive the run.
            with contextlib.suppress(ProcessLookupError):
                await asyncio.shield(proc.wait())
            _, pending = await asyncio.wait(readers, timeout=DRAIN_TIMEOUT_S)
            for reader in pending:  # something that left the group still holds the pipe
                reader.cancel()
            record["exit_code"] = proc.returncode

    async def _answer(
        self,
        tools: BrowserTools,
        answer_file: Path,
        out: StreamCapture,
        err: StreamCapture,
        secrets: Redactor,
        record: dict,
        final: bool = True,
    ) -> None:
        """Submit what the command answered; a non-zero exit is the agent's error even then."""
        answers: list[tuple[dict[str, Any], bool]] = []
        mode = self.params.answer
        exists = answer_file.exists()
        text = answer_file.read_text(encoding="utf-8", errors="replace") if exists else ""
        if mode in ("auto", "file") and text.strip():
            record["answer_source"] = "answer_file"
            answers = parse_answers(text, "the answer file")
        elif mode in ("auto", "stdout") and (line := last_json_line(out.ending())):
            record["answer_source"] = "stdout"
            answers = parse_answers(line, "the last JSON line of stdout")
        for value, claim in answers:
            await tools.answer(value, claims_success=claim)
        code = record.get("exit_code")
        if final and code not in (0, None):
            said = err.ending().strip()[-SHOWN:]
            said = f"; stderr ends: {secrets.text(said)!r}" if said else ""
            raise CommandAgentError(f"command exited with code {code}{said}")


def create(manifest: AgentManifest) -> CommandAgent:
    return CommandAgent(manifest)
