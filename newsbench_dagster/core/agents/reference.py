"""The reference agent: metadata-first, no model. It is the witness other agents are
compared against, so it reads pages the way the oracles do (core.page_understanding: JSON-LD,
OpenGraph, microdata, then the visible page) and never guesses: on an intent it cannot solve,
or when a page does not say, it stops honestly without claiming success.

It solves every read-only intent; the state-changing ones (forms) it declines.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import quote, urljoin

from newsbench_dagster.core.agents import AgentManifest, AgentTask
from newsbench_dagster.core.text import fuzzy
from newsbench_dagster.core.tools import BrowserTools

SAME_HEADLINE = 0.9  # a teaser is the article asked about when its headline matches this well
SUMMARY_STORIES = 3  # an extractive summary of a topic page: its first three teasers


def _utc(stamp: dict | None) -> str | None:
    return (stamp or {}).get("utc")


def _itemlist_first_url(nodes: list) -> str | None:
    for node in nodes:
        if not isinstance(node, dict) or "ItemList" not in str(node.get("@type")):
            continue
        items = node.get("itemListElement")
        first = items[0] if isinstance(items, list) and items else None
        if isinstance(first, dict):
            url = first.get("url") or (first.get("item") or {}).get("url")
            if isinstance(url, str) and url.startswith("http"):
                return url
    return None


class ReferenceAgent:
    def __init__(self, manifest: AgentManifest) -> None:
        self.manifest = manifest
        self._solvers: dict[str, Callable[[AgentTask, BrowserTools], Awaitable[None]]] = {
            "find_top_headline": self._top_headline,
            "extract_article_metadata": self._article_metadata,
            "live_blog_latest": self._live_blog,
            "find_corrections": self._corrections,
            "locate_factbox": self._factbox,
            "find_author_and_time": self._author_and_time,
            "identify_topic_page": self._topic_page,
            "summarize_topic": self._summary,
            "compare_outlets": self._compare_outlets,
        }

    async def run(self, task: AgentTask, tools: BrowserTools) -> None:
        solver = self._solvers.get(task.intent)
        if solver is None:
            # An honest stop: the reference agent does not guess at intents it cannot solve.
            await tools.answer({"unsupported_intent": task.intent}, claims_success=False)
            return
        await solver(task, tools)

    # -- front pages -------------------------------------------------------------------------
    async def _lead(self, tools: BrowserTools) -> dict | None:
        """The lead of the front page in view: its headline and URL as the lead article itself
        states them. Metadata first (a front-page ItemList names the lead whatever the markup
        looks like), then the first teaser under main."""
        home = await tools.get_metadata()
        url = _itemlist_first_url(home["jsonld"])
        if url is None:
            listing = (await tools.read_page()).get("listing") or []
            url = listing[0]["url"] if listing else None
        if url is None:
            return None
        opened = await tools.goto(url)
        if not opened["ok"]:
            return None
        article = await tools.read_page()
        return {"headline": article.get("headline"), "url": article.get("canonical") or url}

    async def _top_headline(self, task: AgentTask, tools: BrowserTools) -> None:
        lead = await self._lead(tools)
        if lead is None or not lead["headline"]:
            await tools.answer({"headline": None, "url": None}, claims_success=False)
            return
        await tools.answer(lead)

    async def _compare_outlets(self, task: AgentTask, tools: BrowserTools) -> None:
        names = task.inputs.get("outlets") or []
        homes = [task.entry_url, *(task.inputs.get("outlet_urls") or [])[1:]]
        outlets = []
        for i, home in enumerate(homes[:2]):
            if i and not (await tools.goto(home))["ok"]:
                break
            lead = await self._lead(tools)
            if lead is None:
                break
            outlets.append({"site": names[i] if i < len(names) else home, **lead})
        if len(outlets) < 2:
            await tools.answer({"outlets": outlets}, claims_success=False)
            return
        same = fuzzy(outlets[0]["headline"], outlets[1]["headline"]) >= SAME_HEADLINE
        await tools.answer({"outlets": outlets, "same_story": same})

    # -- articles ----------------------------------------------------------------------------
    async def _article_metadata(self, task: AgentTask, tools: BrowserTools) -> None:
        page = await tools.read_page()
        await tools.answer(
            {
                "headline": page.get("headline"),
                "authors": list(page.get("authors") or []),
                "published": _utc(page.get("published")),
                "modified": _utc(page.get("modified")),
            },
            claims_success=bool(page.get("headline")),
        )

    async def _corrections(self, task: AgentTask, tools: BrowserTools) -> None:
        shown = (await tools.read_page()).get("corrections") or []
        if not shown:
            await tools.answer({"none": True})
            return
        latest = max(shown, key=lambda c: _utc(c.get("time")) or "")
        await tools.answer({"corrections": latest["text"], "time": _utc(latest.get("time"))})

    async def _factbox(self, task: AgentTask, tools: BrowserTools) -> None:
        facts = (await tools.read_page()).get("factbox") or []
        if not facts:
            await tools.answer({"none": True})
            return
        await tools.answer({"facts": [[f["label"], f["value"]] for f in facts]})

    async def _live_blog(self, task: AgentTask, tools: BrowserTools) -> None:
        latest = (await tools.read_page()).get("latest_update")
        if not latest:
            await tools.answer({"text": None}, claims_success=False)
            return
        await tools.answer({"text": latest["text"], "time": _utc(latest.get("time"))})

    async def _author_and_time(self, task: AgentTask, tools: BrowserTools) -> None:
        """Find the article by its headline: on the front page, else through the site's
        search; then read who wrote it and when from the article itself."""
        wanted = task.inputs.get("headline") or ""
        url = _teaser_url((await tools.read_page()).get("listing"), wanted)
        if url is None:
            search = urljoin(task.entry_url, "/search?q=" + quote(wanted))
            if (await tools.goto(search))["ok"]:
                url = _teaser_url((await tools.read_page()).get("listing"), wanted)
        if url is None or not (await tools.goto(url))["ok"]:
            await tools.answer({"authors": None, "published": None}, claims_success=False)
            return
        page = await tools.read_page()
        await tools.answer(
            {
                "authors": list(page.get("authors") or []),
                "published": _utc(page.get("published")),
                "url": page.get("canonical") or url,
            }
        )

    # -- topic pages -------------------------------------------------------------------------
    async def _topic_page(self, task: AgentTask, tools: BrowserTools) -> None:
        """Follow the navigation link named like the topic and keep it if the page it leads to
        is a collection headed by that topic."""
        topic = task.inputs.get("topic") or ""
        for link in (await tools.links(topic))["links"][:3]:
            if not (await tools.goto(link["href"]))["ok"]:
                continue
            page = await tools.read_page()
            if page.get("kind") == "collection" and fuzzy(page.get("main_heading"), topic) >= 0.8:
                await tools.answer({"url": page.get("canonical") or link["href"]})
                return
        await tools.answer({"url": None}, claims_success=False)

    async def _summary(self, task: AgentTask, tools: BrowserTools) -> None:
        """An extractive summary: the first teasers of the topic page, headline and summary."""
        listing = (await tools.read_page()).get("listing") or []
        parts = []
        for teaser in listing[:SUMMARY_STORIES]:
            parts.append(teaser["headline"].rstrip(".") + ".")
            if teaser.get("summary"):
                parts.append(teaser["summary"])
        await tools.answer({"summary": " ".join(parts)}, claims_success=bool(parts))


def _teaser_url(listing: list | None, headline: str) -> str | None:
    best = max(listing or [], key=lambda t: fuzzy(t.get("headline"), headline), default=None)
    if best and fuzzy(best.get("headline"), headline) >= SAME_HEADLINE:
        return best.get("url")
    return None


def create(manifest: AgentManifest) -> ReferenceAgent:
    return ReferenceAgent(manifest)
