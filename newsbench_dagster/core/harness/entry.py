"""The entry page: the harness loads it before the agent gets the browser. A load that
fails is classified as the environment's failure (site down, DNS, the local world not
started, a timeout, an entry refused or gone, a gap in the recording), never the agent's."""

from __future__ import annotations

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from newsbench_dagster.core.harness.failures import fixture_up, resolves, site_failure
from newsbench_dagster.core.harness.state import RunState
from newsbench_dagster.core.scoring.failures import EnvFailure
from newsbench_dagster.core.web.network import RobotsRules
from newsbench_dagster.core.web.sites import origin_of

EntryFailure = tuple[EnvFailure, str]


async def load_entry(
    page: Page,
    task: dict,
    state: RunState,
    *,
    robots: RobotsRules,
    proxy: str | None,
    timeout_s: float,
) -> EntryFailure | None:
    """Load the task's entry page (live, or from the run's recording); the failure, if any."""
    url = task["entry_url"]
    if state.recording is not None:
        return await _load_replayed_entry(page, url, state, timeout_s)
    if not robots.reachable(origin_of(url)):
        # No robots.txt answer means we may not fetch anything there: the site is down
        # (or, on the embedded default, the newsroom was never started).
        if not fixture_up(proxy):
            kind = EnvFailure.FIXTURE_NOT_STARTED
        elif not proxy and not resolves(url):
            kind = EnvFailure.DNS
        else:
            kind = EnvFailure.SITE_DOWN
        return kind, f"robots.txt of {origin_of(url)} unreachable"
    resp, msg = await _goto(page, url, timeout_s)
    if msg is not None:
        if failure := _refused(url, msg):
            return failure
        kind = site_failure([msg])
        if kind is EnvFailure.SITE_DOWN and not fixture_up(proxy):
            kind = EnvFailure.FIXTURE_NOT_STARTED
        return kind, f"entry {url}: {msg}"
    if resp is not None and resp.status >= 500:
        return EnvFailure.SITE_DOWN, f"entry {url}: HTTP {resp.status}"
    if resp is not None and resp.status >= 400:
        return EnvFailure.ENTRY_UNAVAILABLE, f"entry {url}: HTTP {resp.status}"
    return None


async def _goto(page: Page, url: str, timeout_s: float):
    """The entry page's response, or the first line of the navigation's error."""
    try:
        resp = await page.goto(url, wait_until="domcontentloaded", timeout=timeout_s * 1000)
    except PlaywrightError as e:
        return None, str(e).splitlines()[0]
    return resp, None


async def _load_replayed_entry(
    page: Page, url: str, state: RunState, timeout_s: float
) -> EntryFailure | None:
    """The entry page from the recording; one the recording does not hold is a gap in
    the recording (the environment), not something the agent could have done better."""
    where = state.recording.path.name
    resp, msg = await _goto(page, url, timeout_s)
    if msg is not None:
        return _refused(url, msg) or (
            EnvFailure.REPLAY_GAP,
            f"entry {url} is not in {where}: {msg}",
        )
    entry = next((e for e in state.replay.log if e["type"] == "document" and e["url"] == url), None)
    if entry is not None and entry["tag"] == "miss":
        return EnvFailure.REPLAY_GAP, f"entry {url} is not in {where}"
    if resp is not None and resp.status >= 400:
        return EnvFailure.ENTRY_UNAVAILABLE, f"entry {url}: recorded HTTP {resp.status}"
    return None


def _refused(url: str, msg: str) -> EntryFailure | None:
    """An entry navigation that timed out or that the guard refused (live or replayed)."""
    if "Timeout" in msg:
        return EnvFailure.NAVIGATION_TIMEOUT, f"entry {url}: {msg}"
    if "ERR_BLOCKED_BY_CLIENT" in msg:
        return EnvFailure.ENTRY_UNAVAILABLE, f"entry {url} is not allowed: {msg}"
    return None
