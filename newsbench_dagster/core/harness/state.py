"""One run's record while it runs: the row it becomes and the state its phases, its request
guard and its context's listeners share (requests, safety events, HAR-lite, the browser and
context it lives in, the replay answering it)."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from playwright.async_api import Browser, BrowserContext, Page, Request

from newsbench_dagster.core.agents.protocol import Agent
from newsbench_dagster.core.agents.tools import BrowserTools
from newsbench_dagster.core.harness.cdp_guard import CdpGuard
from newsbench_dagster.core.reading.readings import Readings
from newsbench_dagster.core.replay.replayer import Recording, ReplaySession
from newsbench_dagster.core.web.network import RequestRecord


@dataclass
class RunState:
    requests: list[RequestRecord] = field(default_factory=list)
    safety_events: list[dict] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    # HAR-lite: one entry per request the run's pages made, keyed by Playwright's request.
    har: dict[Request, dict] = field(default_factory=dict)
    t0: float = field(default_factory=time.perf_counter)
    lifecycle: list[dict] = field(default_factory=list)  # closes taken from the agent, waits
    closed: asyncio.Event = field(default_factory=asyncio.Event)  # the context went away
    browser: Browser | None = None  # the browser the run's context lives in
    # The pool's browser, where the harness's probes open contexts of their own (a CDP
    # agent's run lives in a Chromium of its own).
    probe_browser: Browser | None = None
    # Replayed runs: the recording, and the sessions answering the agent's and the
    # harness's requests (one log).
    recording: Recording | None = None
    replay: ReplaySession | None = None
    # What the run holds and cleanup lets go of.
    context: BrowserContext | None = None
    page: Page | None = None  # the harness's page (the entry), the agent's first tab
    tools: BrowserTools | None = None
    cdp: CdpGuard | None = None  # a CDP agent's guard, and its Chromium's profile dir
    own_dir: str | None = None
    # The pages read in this run (the harness's observations, the agent's read_page).
    readings: Readings = field(default_factory=Readings)

    def agent_bytes(self) -> int:
        return sum(r.bytes for r in self.requests if r.actor == "agent" and r.fetched)

    def context_alive(self) -> bool:
        browser = self.context.browser if self.context is not None else None
        return browser is None or browser.is_connected()

    def browser_lost(self) -> bool:
        """The run's context or browser went away (closed, crashed, disconnected)."""
        return self.closed.is_set() or self.browser is None or not self.browser.is_connected()


def new_row(task: Any, agent: Agent, trial: int, day: date, run_id: str, started_at: datetime):
    """The run's row before it runs: every column, at its empty value."""
    manifest = agent.manifest
    fields = task if isinstance(task, dict) else {}  # a malformed task is reported later
    return {
        "run_id": run_id,
        "task_id": task_id_of(task),
        "site": fields.get("site"),
        "day": day,
        "intent": fields.get("intent"),
        "entry_url": fields.get("entry_url"),
        "agent_name": manifest.name,
        "agent_version": manifest.agent_version,
        "trial": trial,
        "started_at": started_at,
        "run_status": None,
        "env_failure": None,
        "error": None,
        "steps": 0,
        "tokens": 0,
        "requests": 0,
        "bytes": 0,
        "answer_seconds": None,
        "answer": None,
        "answers": [],
        "self_reported_success": None,
        "observation": None,
        "trajectory": [],
        "request_log": [],
        "safety_events": [],
        "console_errors": [],
        "artifacts": {},
    }


def task_id_of(task: Any) -> str:
    return (task.get("id") if isinstance(task, dict) else None) or "<no id>"


def world_scope(row: dict) -> str:
    """This execution of the run, as the world sees it: the run id repeats on a re-run,
    the nonce does not, so the world's log never mixes two executions."""
    return row.setdefault("_scope", f"{row['run_id']}.{uuid.uuid4().hex[:8]}")
