"""The harness's own observation of a page, independent of anything the agent reported.

Taken of the entry page right after the harness loads it and of the final page before the
browser context is closed; checkers score answers against these observations only.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from newsbench_dagster.core.reading.metadata import DOM_READ_JS, parse_jsonld
from newsbench_dagster.core.reading.readings import Readings

# A page that is still navigating (e.g. Chromium committing its own error page right after a
# blocked navigation) destroys the script's context mid-evaluation; look again once it settles.
_NAVIGATING = ("context was destroyed", "navigat")
ATTEMPTS = 3


async def read_dom(page: Page) -> dict:
    """One DOM read of `page` (metadata and document), looked at again once a navigation
    under way settles."""
    for attempt in range(ATTEMPTS):
        try:
            read = await page.evaluate(DOM_READ_JS)
            break
        except PlaywrightError as e:
            if attempt == ATTEMPTS - 1 or not any(m in str(e) for m in _NAVIGATING):
                raise
            await page.wait_for_load_state("domcontentloaded")
    read["read_at"] = datetime.now(UTC).isoformat()
    return read


async def current_read(page: Page, readings: Readings, actions: int, *, by_agent: bool) -> dict:
    """The run's last read of `page` while it still stands (`Readings.fresh`), else a new
    one, kept. The harness's final look takes only a read the agent's tools took; the agent's
    tools take any, and it counts as theirs from then on."""
    raw = readings.fresh(page, page.url, actions, agents_only=not by_agent, for_agent=by_agent)
    if raw is None:
        raw = await read_dom(page)
        readings.keep(page, raw, actions, by_agent=by_agent)
    return raw


async def observe(page: Page, readings: Readings | None = None, actions: int | None = None) -> dict:
    """The page as the harness sees it now. With `actions` (the run's page-changing steps so
    far), the agent's last read of this page through its tools stands in when nothing was done
    to it since and it is fresh (`Readings.fresh`); its `observed_at` is then that read's
    time."""
    if readings is not None and actions is not None:
        raw = await current_read(page, readings, actions, by_agent=False)
    else:  # a first look: always read now
        raw = await read_dom(page)
        if readings is not None:
            readings.keep(page, raw, 0)
    nodes, errors = parse_jsonld(raw.pop("jsonld"))
    raw["jsonld"] = nodes
    raw["jsonld_errors"] = errors
    # The same DOM read as a page record (live-blog updates, corrections, all candidates):
    # what the checkers of the newer intents read.
    html = raw.pop("html", "") or ""
    raw["page"] = (readings or Readings(size=1)).record(html, raw.get("url")) if html else None
    raw["observed_at"] = raw.pop("read_at")
    return raw


async def observe_within(
    page: Page, timeout_s: float, readings: Readings | None = None, actions: int | None = None
) -> dict | None:
    """The page's observation, or None when it failed or took longer than `timeout_s`."""
    try:
        return await asyncio.wait_for(observe(page, readings, actions), timeout_s)
    except (PlaywrightError, TimeoutError):
        return None
