"""Ground truth for meta-evaluation: what a site shows at an instant, from the content model.

Tests and benchmarks use it to measure how often an oracle is right; checkers and agents must
never read it (they work from the page, as on the real web). Over HTTP it is served only by a
server started with expose_truth=True.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from newsbench_dagster.core.json_ready import json_ready

from .clock import as_utc
from .site_world import FEED_SIZE, SiteWorld
from .stories import Story


@dataclass(frozen=True)
class ArticleTruth:
    url: str
    headline: str  # the on-page headline (JSON-LD agrees when it is present and parses)
    og_title: str
    authors: list[str]  # people; empty when the byline is the site's name
    byline: str  # what the visible byline names
    published: datetime
    modified: datetime
    section: str
    quirk: str | None
    paywalled: bool
    correction: dict[str, Any] | None
    trap: str | None
    # The fact box's [label, value] pairs in page order (labels in the site's language);
    # None when the article has none.
    factbox: list[list[str]] | None = None

    @classmethod
    def of(cls, site: SiteWorld, story: Story, at: datetime) -> ArticleTruth:
        correction = story.correction_at(at)
        return cls(
            url=story.url,
            headline=story.headline,
            og_title=story.og_title,
            authors=list(story.authors),
            byline=", ".join(story.authors) or site.spec.name,
            published=story.published,
            modified=story.modified_at(at),
            section=story.section,
            quirk=story.quirk,
            paywalled=story.paywalled,
            correction={"at": correction.at, "text": correction.text} if correction else None,
            trap=story.trap,
            factbox=[list(fact) for fact in story.factbox] if story.factbox else None,
        )


@dataclass(frozen=True)
class SiteTruth:
    site: str
    at: datetime
    template_version: int
    lead: ArticleTruth
    front: list[str]  # URLs of the other front-page stories, in page order
    articles: list[ArticleTruth]  # the feed's stories, newest first
    liveblog: dict[str, Any]
    corrections: list[dict[str, Any]]  # last 7 days, latest first
    drifts: list[dict[str, Any]]
    traps: list[dict[str, Any]]  # on the front page now, and in the articles above

    def as_dict(self) -> dict[str, Any]:
        return json_ready(asdict(self))


def site_truth(site: SiteWorld, at: datetime) -> SiteTruth:
    at = as_utc(at)
    front = site.front_page(at)
    articles = [ArticleTruth.of(site, s, at) for s in site.stories(at, FEED_SIZE)]
    blog = site.current_liveblog(at)
    latest = blog.latest(at)
    traps: list[dict[str, Any]] = []
    if (heading := site.deceptive_heading(at)) is not None:
        traps.append({"kind": "deceptive_heading", "url": site.url("/"), "text": heading})
    traps += [{"kind": a.trap, "url": a.url} for a in articles if a.trap]
    if site.spec.adversarial:
        traps.append({"kind": "injection_search", "url": site.url("/search")})
    return SiteTruth(
        site=site.key,
        at=at,
        template_version=site.version(at),
        lead=ArticleTruth.of(site, front.lead, at),
        front=[s.url for s in front.others],
        articles=articles,
        liveblog={
            "url": blog.url,
            "title": blog.title,
            "live": blog.live(at),
            "pinned": {"id": blog.pinned.id, "text": blog.pinned.text},
            "latest": (
                {"id": latest.id, "published": latest.published, "text": latest.text}
                if latest
                else None
            ),
            "entries": len(blog.entries(at)),
        },
        corrections=[
            {"url": s.url, "at": s.correction.at, "text": s.correction.text}  # type: ignore[union-attr]
            for s in site.corrections(at)
        ],
        drifts=[{"on": d.on, "version": d.version} for d in site.spec.drifts],
        traps=traps,
    )
