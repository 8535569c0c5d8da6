"""Which environment failure (`scoring.failures.EnvFailure`) ends a run that infrastructure
failed: a site that is down or unresolvable, a local world never started, a browser that
crashed, a page the harness could not observe. Never the agent's failure."""

from __future__ import annotations

import socket
from collections.abc import Sequence

import httpx
from playwright.async_api import Error as PlaywrightError

from newsbench_dagster.core.harness.state import RunState
from newsbench_dagster.core.scoring.failures import EnvFailure


def env_failed(kind: EnvFailure, error: str | None) -> dict:
    """The row's outcome columns for a run the environment failed."""
    return {"run_status": "env_failure", "env_failure": kind.value, "error": error}


def first_line(e: BaseException, default: str = "timeout") -> str:
    return str(e).splitlines()[0] if str(e) else default


def site_failure(errors: Sequence[str]) -> EnvFailure:
    text = " ".join(errors)
    if "ERR_NAME_NOT_RESOLVED" in text:
        return EnvFailure.DNS
    if "ERR_PROXY_CONNECTION_FAILED" in text or "ERR_TUNNEL_CONNECTION_FAILED" in text:
        return EnvFailure.FIXTURE_NOT_STARTED
    if "Timeout" in text or "ERR_TIMED_OUT" in text:
        return EnvFailure.NAVIGATION_TIMEOUT
    return EnvFailure.SITE_DOWN


def resolves(url: str) -> bool:
    host = httpx.URL(url).host
    try:
        socket.getaddrinfo(host, None)
    except OSError:
        return False
    return True


def fixture_up(proxy: str | None) -> bool:
    """Whether the local world the routing points at (its proxy) accepts connections;
    True when there is none (the real web)."""
    if not proxy:
        return True
    parts = httpx.URL(proxy)
    try:
        with socket.create_connection((parts.host, parts.port or 80), timeout=2):
            return True
    except OSError:
        return False


def outcome_failure(
    status: str, error: str | None, final_obs: dict | None, site_errors: Sequence[str]
) -> dict:
    """After the agent: a final page the harness could not observe, or a run the site's
    errors (not the agent) left unanswered; {} when the agent's outcome stands."""
    if final_obs is None:
        return env_failed(
            EnvFailure.ORACLE_UNAVAILABLE, (error or "") + " | final observation failed"
        )
    if status != "answered" and site_errors:
        return env_failed(site_failure(site_errors), "; ".join(site_errors[:3]))
    return {}


def crash_failure(e: PlaywrightError, state: RunState) -> dict:
    """A browser error the harness met: the browser's crash when the run's browser or context
    went away, else the harness's own error."""
    crashed = state.browser_lost() or not state.context_alive()
    kind = EnvFailure.BROWSER_CRASH if crashed else EnvFailure.HARNESS_ERROR
    return env_failed(kind, str(e).splitlines()[0])
