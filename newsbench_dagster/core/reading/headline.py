"""A page's headline and main heading: every headline signal with where it came from, and the
one chosen (structured data first, the site's name stripped from titles)."""

from __future__ import annotations

import re
import unicodedata
from typing import Any
from urllib.parse import urlsplit

from rapidfuzz import fuzz

from newsbench_dagster.core.reading.bylines import affixes, is_site_name, strip_site_name
from newsbench_dagster.core.reading.evidence import Vote, choose
from newsbench_dagster.core.reading.page_reader import PageReader, clean, first, visible_text
from newsbench_dagster.core.reading.page_record import Candidate

_LEVEL_1 = "descendant::*[self::h1 or (@role='heading' and @aria-level='1')][1]"


def main_heading(r: PageReader) -> str | None:
    """The h1 (or role=heading aria-level=1) under main; with no main, the page's first."""
    found = (r.main if r.main is not None else r.doc).xpath(_LEVEL_1)
    return (visible_text(found[0]) or None) if found else None


def _h1(r: PageReader) -> str | None:
    """The story's h1: under main first; never a logo (an h1 in the page's header or nav,
    inside a link home, or naming the site)."""
    scopes = [r.main] if r.main is not None else []
    for scope in [*scopes, r.doc]:
        for h in scope.xpath(".//h1")[:10]:
            text = heading_text(h)
            if text and not _is_logo(r, h, text):
                return text
    return None


def heading_text(h: Any) -> str:
    """A heading's text as shown: inline markup adds no space ("みた<span>：</span>さらば")."""
    parts: list[str] = []
    for node in h.iter():
        tag = node.tag if isinstance(node.tag, str) else ""
        if tag in ("br", "div", "p", "li"):  # what breaks a line breaks the words
            parts.append(" ")
        if tag not in ("script", "style"):
            parts.append(node.text or "")
        if node is not h:
            parts.append(node.tail or "")
    return clean("".join(parts))


def _path(href: str | None) -> str:
    try:
        return urlsplit(href or "x").path
    except ValueError:  # a broken IPv6 host: not a link home
        return "x"


def _is_logo(r: PageReader, h: Any, text: str) -> bool:
    if is_site_name(text, [*r.site_names, *r.host_names]):
        return True
    for a in h.iterancestors():
        if a.tag == "nav" or (a.tag == "a" and _path(a.get("href")) in ("", "/")):
            return True
    links = h.xpath(".//a[@href]")
    return bool(links) and all(_path(x.get("href")) in ("", "/") for x in links)


# How far each headline signal is trusted (evidence.choose); the order is the precedence that
# writes the winner (structured data's wording over the visible one).
HEADLINE_WEIGHTS = {
    "jsonld": 3.0,
    "microdata": 2.5,
    "og:title": 2.5,
    "twitter:title": 2.0,
    "h1": 2.0,
    "title": 2.0,
    "trafilatura": 1.5,
}
SAME_HEADLINE = 92  # rapidfuzz ratio at or above which two headlines are one


def same_headline(a: str, b: str) -> bool:
    x, y = _norm(a), _norm(b)
    return x == y or fuzz.ratio(x, y) >= SAME_HEADLINE


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).casefold().strip(" .:")


def read_headline(
    r: PageReader, article: dict, mprops: dict, og: dict
) -> tuple[str | None, tuple[Candidate, ...]]:
    """Every headline signal, voted on: JSON-LD, microdata, og:title and twitter:title and
    <title> (site name stripped), the main h1, and trafilatura's title. A site's logo in an
    h1 or an SEO title loses to what the other signals agree on."""
    heads: list[Candidate] = []
    names = [*r.site_names, *r.host_names]
    for source, value, strip in (
        ("jsonld", article.get("headline"), False),
        ("microdata", mprops.get("headline"), False),
        ("og:title", og.get("og:title"), True),
        ("twitter:title", first(r.meta("twitter:title")), True),
        ("h1", _h1(r), False),
        ("title", first(r.doc.xpath("//title/text()")), True),
        ("trafilatura", r.libraries.title, True),
    ):
        raw = clean(first(value))
        clean_value = strip_site_name(raw, names) if strip else raw
        # A title that is only the site's name says nothing about the story.
        if clean_value and not is_site_name(clean_value, names):
            heads.append(Candidate(clean_value, source, raw if raw != clean_value else ""))
    # "Headline - Site Blog" with the site's name unknown: the affix is the site's when what
    # is left is what another signal says.
    for i, c in enumerate(heads):
        others = [o.value for o in heads if o is not c]
        for part in affixes(c.value):
            named = is_site_name(part, names)
            if not named and any(same_headline(part, o) for o in others):
                heads[i] = Candidate(part, c.source, c.raw or c.value)
                break
    # trafilatura reads the same meta tags: agreeing with one of them it is an echo, not a
    # second witness, and only votes when it read something the page's own signals did not.
    own = [c.value for c in heads if c.source != "trafilatura"]
    votes = [
        Vote(c.value, c.source, HEADLINE_WEIGHTS[c.source])
        for c in heads
        if c.source != "trafilatura" or not any(same_headline(c.value, o) for o in own)
    ]
    return r.chose("headline", choose(votes, same_headline)), tuple(heads)
