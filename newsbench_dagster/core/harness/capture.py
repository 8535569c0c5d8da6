"""What a run leaves behind besides its row, and the row itself: artifacts captured before
cleanup (screenshot, accessibility snapshot, DOM slices, HAR-lite, console errors, trace),
what an adapter kept of its agent, the run's spans, and `run.json`, written as soon as the
run ends so that a crash later in the batch loses nothing."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from datetime import UTC, datetime
from typing import Any

from playwright.async_api import BrowserContext, Page
from playwright.async_api import Error as PlaywrightError

from newsbench_dagster.core.agents.tools import BrowserTools
from newsbench_dagster.core.artifacts import ArtifactStore
from newsbench_dagster.core.harness.failures import first_line
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.harness.state import RunState
from newsbench_dagster.core.harness.telemetry import export_run_spans, otlp_endpoint_from_env
from newsbench_dagster.core.secrets import Redactor, redacting

A11Y_MAX_CHARS = 256_000


def artifact_key(task: dict, row: dict, name: str, folder: str = "") -> str:
    within = f"{folder}/" if folder else ""  # the batch's folder (RunSettings.artifact_folder)
    return f"runs/{task['site']}/{row['day']}/{within}{row['run_id']}/{name}"


class RunCapture:
    """Writes what every run of a batch leaves behind to the artifact store."""

    def __init__(self, store: ArtifactStore, settings: RunSettings) -> None:
        self.store = store
        self.settings = settings
        # Spans go to OTLP when configured (here, or by the standard OTEL_* variables).
        self._otlp = (
            (settings.otlp_endpoint, settings.otlp_headers)
            if settings.otlp_endpoint
            else otlp_endpoint_from_env(os.environ)
        )
        self.redactor = Redactor()

    def redact_with(self, redactor: Redactor) -> None:
        """The secrets of the batch's runs (core.secrets), kept out of what they leave: each
        row, once, in `finish`, and every artifact, as the store writes it."""
        self.redactor = redactor
        self.store = redacting(self.store, redactor)

    def _key(self, task: dict, row: dict, name: str) -> str:
        return artifact_key(task, row, name, self.settings.artifact_folder)

    def _put(self, task: dict, row: dict, name: str, data: bytes) -> str:
        return self.store.put(self._key(task, row, name), data)

    async def artifacts(
        self,
        context: BrowserContext,
        page: Page | None,
        row: dict,
        task: dict,
        state: RunState,
        tools: BrowserTools | None,
    ) -> None:
        """Captured before cleanup; a failed capture is noted, never fatal."""
        keep, art = self.settings.keeps, row["artifacts"]
        failed: dict[str, str] = {}
        if page is not None and not page.is_closed() and keep("screenshot"):
            try:
                png = await page.screenshot(type="png", timeout=5_000)
                art["screenshot"] = self._put(task, row, "final.png", png)
            except PlaywrightError as e:
                failed["screenshot"] = str(e).splitlines()[0]
        if page is not None and not page.is_closed() and keep("a11y"):
            try:
                snap = await page.locator("body").aria_snapshot(timeout=5_000)
                art["a11y"] = self._put(task, row, "a11y.yaml", snap[:A11Y_MAX_CHARS].encode())
            except PlaywrightError as e:
                failed["a11y"] = str(e).splitlines()[0]
        if keep("dom") and tools is not None and tools.dom_slices:
            art["dom"] = [
                self._put(task, row, f"dom/{i:03d}-{s['tool']}.html", s["html"].encode())
                for i, s in enumerate(tools.dom_slices)
            ]
        if keep("har"):
            entries = sorted(state.har.values(), key=lambda h: h["start_ms"])
            art["har"] = self.store.put_json(self._key(task, row, "har.json"), entries)
        if keep("console"):  # an empty list says "none", where no file would say nothing
            art["console"] = self.store.put_json(
                self._key(task, row, "console.json"), state.console_errors
            )
        if keep("trace"):
            await self._trace(context, row, task, failed)
        if failed:
            row["artifact_errors"] = failed

    async def _trace(self, context: BrowserContext, row: dict, task: dict, failed: dict) -> None:
        fd, path = tempfile.mkstemp(suffix=".zip", prefix="newsbench-trace-")
        os.close(fd)
        try:
            await asyncio.wait_for(context.tracing.stop(path=path), 20)
            with open(path, "rb") as f:
                row["artifacts"]["trace"] = self._put(task, row, "trace.zip", f.read())
        except (PlaywrightError, TimeoutError) as e:
            failed["trace"] = first_line(e)
        finally:
            os.unlink(path)

    def outputs(self, row: dict, task: dict, outputs: dict) -> None:
        """What an adapter kept of its agent (stdout, stderr, settings): stored, never
        trusted; files as artifacts, anything else under the row's `adapter`."""
        for name, value in (outputs or {}).items():
            if isinstance(value, bytes):
                row["artifacts"][name] = self._put(task, row, name, value)
            elif isinstance(value, str):
                row["artifacts"][name] = self._put(task, row, name, value.encode())
            else:
                row.setdefault("adapter", {})[name] = value

    def finish(
        self,
        row: dict,
        task: Any,
        state: RunState | None = None,
        tools: BrowserTools | None = None,
    ) -> dict:
        """The run's row, complete: its state and the agent's trajectory folded in, its spans
        exported and `run.json` written."""
        row["ended_at"] = datetime.now(UTC)
        row.pop("_scope", None)  # kept in environment / observation, not a column
        row.pop("_profile", None)
        row.pop("_replay", None)
        stored = isinstance(task, dict) and task.get("site")
        if state is not None and state.replay is not None:
            self._replay_log(row, task, state, stored)
        if state is not None:
            _fold_state(row, state)
        if tools is not None:
            _fold_tools(row, tools)
        row.setdefault("environment", {})
        if self.redactor:
            # The one redaction of the row: the warehouse, Dagster's log, the CLI's lines,
            # the spans and run.json are all made from it from here on.
            for name, value in row.items():
                row[name] = self.redactor.value(value)
        if stored:
            if self.settings.keeps("spans") and tools is not None:
                self._spans(row, task, tools)
            # Written as soon as the run ends, so a crash later in the batch loses nothing.
            # With the task it ran (oracle included: run.json is the harness's, never shown to
            # an agent), so a failing run can become a regression task exactly; and with
            # every artifact of the run, itself included, as the warehouse row lists them.
            key = self._key(task, row, "run.json")
            row["artifacts"]["run"] = self.store.uri(key)
            self.store.put_json(key, {**row, "task": task})
        return row

    def _replay_log(self, row: dict, task: Any, state: RunState, stored: bool) -> None:
        # The replay log (agent's and harness's requests, tagged) and its coverage: what
        # the next recording should add.
        row["replay"]["coverage"] = state.replay.coverage()
        row["replay"]["agent_misses"] = len(state.replay.agent_misses())
        if stored:
            row["artifacts"]["replay_log"] = self._put(
                task,
                row,
                "replay.jsonl",
                "".join(json.dumps(e) + "\n" for e in state.replay.log).encode(),
            )

    def _spans(self, row: dict, task: dict, tools: BrowserTools) -> None:
        # Wall clock at the agent's t=0 (the tools keep a perf_counter origin).
        t0_ns = time.time_ns() - round(tools.elapsed() * 1e9)
        endpoint, headers = self._otlp
        telemetry = export_run_spans(
            row,
            t0_ns,
            endpoint=endpoint,
            headers=headers,
            file_writer=lambda data: self._put(task, row, "spans.jsonl", data),
            timeout_s=1.0,  # a collector that is down costs the pool at most this
        )
        row["environment"]["telemetry"] = telemetry
        if telemetry.get("exported") == "file":
            row["artifacts"]["spans"] = telemetry["uri"]


def _fold_state(row: dict, state: RunState) -> None:
    """The requests, safety events, console errors and page loads the run's guard and
    listeners kept."""
    row["request_log"] = [r.as_dict() for r in state.requests]
    row["requests"] = len(state.requests)
    row["bytes"] = sum(r.bytes for r in state.requests)
    row["safety_events"] = state.safety_events
    row["console_errors"] = state.console_errors[:50]
    loads = sorted(
        e["duration_ms"]
        for e in state.har.values()
        if e["type"] == "document" and e["duration_ms"] and not e.get("blocked")
    )
    row["page_load_ms"] = loads[len(loads) // 2] if loads else None
    if state.lifecycle:
        row["lifecycle"] = state.lifecycle


def _fold_tools(row: dict, tools: BrowserTools) -> None:
    """The agent's steps, tokens, trajectory and answers (the last one is the answer)."""
    traj = tools.trajectory
    row["steps"] = tools.steps
    row["tokens"] = traj.tokens
    row["trajectory"] = traj.steps
    row["answers"] = [
        {"value": a.value, "seconds": a.seconds, "claims_success": a.claims_success}
        for a in traj.answers
    ]
    if traj.answers:
        last = traj.answers[-1]
        row["answer"] = last.value
        row["answer_seconds"] = last.seconds
        row["self_reported_success"] = last.claims_success
