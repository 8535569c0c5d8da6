"""The story teasers a page lists in its main content (a section front, search results, the
home page): each teaser's headline, absolute URL and the summary shown with it, if any."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urldefrag, urljoin

from newsbench_dagster.core.reading.page_reader import (
    HEADING,
    PageReader,
    clean,
    first,
    visible_text,
)
from newsbench_dagster.core.reading.page_record import Teaser

LISTING_LIMIT = 500  # teasers kept at most (a hostile page may have 100,000)
# What to leave out of a listing: navigation, asides, footers and their ARIA roles.
_OUTSIDE_LISTING = {"nav", "aside", "footer"}
_OUTSIDE_ROLES = {"navigation", "complementary", "contentinfo", "banner", "search"}
# Sponsored blocks, and other stories' blocks that are not the page's own listing.
_NOT_LISTING_CLASS = re.compile(
    r"sponsor|promo|advert|\bads?\b|related|most-?read|popular|populaire|meistgelesen|trending"
    r"|recommend",
    re.IGNORECASE,
)
# What a summary is not. Whole words of a class ("card-section", "breve__date"), not parts
# ("stage", "update").
_NOT_SUMMARY_CLASS = re.compile(
    r"(?<![a-z])(?:byline|author|autor|signature|date|dateline|datetime|datum|time|timestamp"
    r"|kicker|surtitre|dachzeile|topline|rubri[a-z]*|label|meta|credit|section|tags?)(?![a-z])",
    re.IGNORECASE,
)
_SUMMARY_CLASS = ("summary", "excerpt", "standfirst", "dek", "chapo", "teaser-text", "lede")


def _outside_listing(el: Any, stop: Any) -> bool:
    """Inside navigation, an aside, a footer, a page header (an article's own header may hold
    a headline) or a sponsored block."""
    header = False
    for a in el.iterancestors():
        if a is stop:
            break
        tag = a.tag if isinstance(a.tag, str) else ""
        if tag in _OUTSIDE_LISTING or (a.get("role") or "").lower() in _OUTSIDE_ROLES:
            return True
        if a.get("data-sponsored") or _NOT_LISTING_CLASS.search(a.get("class") or ""):
            return True
        if tag == "header":
            header = True
        elif tag == "article":
            header = False
    return header


def read_listing(r: PageReader) -> list[Teaser]:
    """Story teasers under main (the whole page when there is none), in page order: a link in
    a heading (or holding one) is a headline; a nearby paragraph is its summary."""
    scope = r.main if r.main is not None else first(r.doc.xpath("//body"))
    scope = r.doc if scope is None else scope
    links = scope.xpath(
        f".//a[@href][ancestor::*[{HEADING}] or descendant::*[{HEADING}]"
        " or contains(@class, 'headline')]"
    )
    found: list[tuple[Any, str, str]] = []  # (anchor node, url, headline)
    seen: set[str] = set()
    for a in links:
        href = (a.get("href") or "").strip()
        if not href or href.startswith(("#", "javascript:", "mailto:", "tel:")):
            continue
        if _outside_listing(a, scope):
            continue
        heading = first(a.xpath(f"ancestor::*[{HEADING}][1]"))
        if heading is None:
            heading = first(a.xpath(f"descendant::*[{HEADING}][1]"))
        if heading is not None and a in heading.iterancestors():
            headline = visible_text(heading)  # the link holds the heading (and perhaps more)
        else:
            headline = visible_text(a) or (visible_text(heading) if heading is not None else "")
        try:
            url = urljoin(r.base or "", href)
        except ValueError:
            url = href
        if not headline or urldefrag(url).url in seen:
            continue
        seen.add(urldefrag(url).url)
        found.append((heading if heading is not None else a, url, headline))
        if len(found) >= LISTING_LIMIT:
            break
    # Which teasers each ancestor holds: a teaser's block is its largest ancestor holding no
    # other teaser (a card, a list item), where its summary is looked for.
    holds: dict[Any, set[str]] = {}
    for anchor, url, _ in found:
        for a in anchor.iterancestors():
            if a is scope:
                break
            holds.setdefault(a, set()).add(url)
    out = []
    for anchor, url, headline in found:
        block = anchor
        for a in anchor.iterancestors():
            if a is scope or holds.get(a, set()) - {url}:
                break
            block = a
        out.append(Teaser(headline=headline, url=url, summary=_summary(block, anchor, headline)))
    return out


def _summary(block: Any, anchor: Any, headline: str) -> str | None:
    """The first summary-like paragraph after the headline in its block, else the nearest one
    before it (some designs put the teaser text above the headline)."""
    if block is anchor:
        return None

    def candidate(el: Any) -> bool:
        tag = el.tag if isinstance(el.tag, str) else ""
        cls = (el.get("class") or "").lower() if tag else ""
        if tag != "p" and not (any(c in cls for c in _SUMMARY_CLASS) and el.find(".//p") is None):
            return False
        return not _NOT_SUMMARY_CLASS.search(cls)

    def summary(el: Any) -> str | None:
        if anchor in el.iterancestors() or el in anchor.iterancestors():
            return None
        if el.find(".//time") is not None:
            return None  # a dateline
        text = visible_text(el)
        linked = clean(" ".join(visible_text(x) for x in el.iter("a")))
        return None if not text or text in (linked, headline) else text

    before: list[Any] = []
    after = False
    checked = 0
    for el in block.iter():
        if el is anchor:
            after = True
        elif candidate(el):
            if not after:
                before.append(el)
                continue
            if (text := summary(el)) is not None:
                return text
            checked += 1
            if checked >= 20:
                break
    for el in reversed(before[-20:]):
        if (text := summary(el)) is not None:
            return text
    return None
