"""The harness's own observation of a page, independent of anything the agent reported.

Taken of the entry page right after the harness loads it and of the final page before the
browser context is closed; checkers score answers against these observations only.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from newsbench_dagster.core.reading.metadata import PAGE_METADATA_JS, parse_jsonld
from newsbench_dagster.core.reading.page import understand

# Metadata and the serialised document in one evaluation: each round trip to a page that is
# still busy loading waits for its main thread (measured: ~25 ms right after DOMContentLoaded).
OBSERVE_JS = (
    "() => { const meta = (" + PAGE_METADATA_JS + ")(); const d = document.doctype;"
    " meta.html = (d ? '<!DOCTYPE ' + d.name + '>' : '') + document.documentElement.outerHTML;"
    " return meta; }"
)

# A page that is still navigating (e.g. Chromium committing its own error page right after a
# blocked navigation) destroys the script's context mid-evaluation; look again once it settles.
_NAVIGATING = ("context was destroyed", "navigat")
ATTEMPTS = 3


async def observe(page: Page) -> dict:
    for attempt in range(ATTEMPTS):
        try:
            raw = await page.evaluate(OBSERVE_JS)
            break
        except PlaywrightError as e:
            if attempt == ATTEMPTS - 1 or not any(m in str(e) for m in _NAVIGATING):
                raise
            await page.wait_for_load_state("domcontentloaded")
    nodes, errors = parse_jsonld(raw.pop("jsonld"))
    raw["jsonld"] = nodes
    raw["jsonld_errors"] = errors
    # The same DOM read as a page record (live-blog updates, corrections, all candidates):
    # what the checkers of the newer intents read.
    html = raw.pop("html", "") or ""
    raw["page"] = understand(html, url=raw.get("url")).as_dict() if html else None
    raw["observed_at"] = datetime.now(UTC).isoformat()
    return raw


async def observe_within(page: Page, timeout_s: float) -> dict | None:
    """The page's observation, or None when it failed or took longer than `timeout_s`."""
    try:
        return await asyncio.wait_for(observe(page), timeout_s)
    except (PlaywrightError, TimeoutError):
        return None
