"""The selector baseline: a deliberately brittle agent that reads pages through fixed CSS
selectors learned from ONE template, the way a hand-written scraper does. No metadata
(JSON-LD, OpenGraph), no fallbacks, no looking around.

It succeeds on the template it learned on and breaks on drift: another template family, or
the same site after a redesign. It is the yardstick for "does this benchmark notice layout
drift?": if the selector baseline keeps scoring after a redesign, the suite is not measuring
robustness. When a selector matches nothing the field is left empty and success is not
claimed, so the break shows as a wrong or missing answer, never as a harness error.
"""

from __future__ import annotations

from urllib.parse import urljoin

from newsbench_dagster.core.agents.protocol import AgentManifest, AgentTask
from newsbench_dagster.core.agents.tools import BrowserTools

# Where the selectors were learned: the newsroom's Harbor Herald, template family "classic",
# version 1 (served until its redesign of 2026-11-16; newsroom/templates/classic/*.html, the
# `v < 2` branches). Other sites of that family and version read the same.
LEARNED_ON = {"site": "harbor", "family": "classic", "version": 1}
SELECTORS = {
    # front page: the lead story's headline link
    "lead_link": "main article.lead-story h1.lead-headline a",
    # article page
    "headline": "main article.story h1.headline",
    "authors": "main article.story p.byline a[rel=author]",
    "published": "main article.story time.published",  # its datetime attribute
    "modified": "main article.story time.updated",  # only there once the story was updated
}


async def _attr(tools: BrowserTools, selector: str, name: str) -> str | None:
    """An attribute of the first match, None when nothing matches (no waiting: the page is
    loaded, and a scraper does not wait for markup that is not its template)."""
    found = tools.page.locator(selector)
    if await found.count() == 0:
        return None
    return await found.first.get_attribute(name, timeout=tools.action_timeout_ms)


class SelectorBaseline:
    def __init__(self, manifest: AgentManifest) -> None:
        self.manifest = manifest

    async def run(self, task: AgentTask, tools: BrowserTools) -> None:
        if task.intent == "find_top_headline":
            await self._top_headline(tools)
        elif task.intent == "extract_article_metadata":
            await self._article_metadata(tools)
        else:
            await tools.answer({"unsupported_intent": task.intent}, claims_success=False)

    async def _top_headline(self, tools: BrowserTools) -> None:
        link = SELECTORS["lead_link"]
        headline = (await tools.extract_text(link)).get("text")
        href = await _attr(tools, link, "href") if headline else None
        url = urljoin(tools.page.url, href) if href else None
        await tools.answer({"headline": headline, "url": url}, claims_success=bool(headline))

    async def _article_metadata(self, tools: BrowserTools) -> None:
        headline = (await tools.extract_text(SELECTORS["headline"])).get("text")
        authors = await tools.page.locator(SELECTORS["authors"]).all_inner_texts()
        published = await _attr(tools, SELECTORS["published"], "datetime")
        modified = await _attr(tools, SELECTORS["modified"], "datetime")
        await tools.answer(
            {
                "headline": headline,
                "authors": [" ".join(a.split()) for a in authors],
                "published": published,
                "modified": modified,
            },
            claims_success=bool(headline),
        )


def create(manifest: AgentManifest) -> SelectorBaseline:
    return SelectorBaseline(manifest)
