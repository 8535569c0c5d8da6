"""The harness's own observation of a page, independent of anything the agent reported.

Taken of the entry page right after the harness loads it and of the final page before the
browser context is closed; checkers score answers against these observations only.
"""

from __future__ import annotations

from playwright.async_api import Page

from newsbench_dagster.core.page_metadata import PAGE_METADATA_JS, parse_jsonld


async def observe(page: Page) -> dict:
    raw = await page.evaluate(PAGE_METADATA_JS)
    nodes, errors = parse_jsonld(raw.pop("jsonld"))
    raw["jsonld"] = nodes
    raw["jsonld_errors"] = errors
    return raw
