"""Who wrote a page, and what the site calls itself: the people named by JSON-LD, microdata,
meta tags or the visible byline (organisations credited as authors kept apart), and the site
names that are never an author and not part of a headline ("Headline | Site")."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rapidfuzz import fuzz

from newsbench_dagster.core.reading.page_reader import (
    PageReader,
    as_list,
    clean,
    first,
    is_organization,
    visible_text,
)
from newsbench_dagster.core.reading.page_record import Candidate

SITE_NAME_MATCH = 90  # rapidfuzz ratio at or above which a byline is the site's name
# Separators between a headline and a site name in <title> and og:title.
_SEPARATOR = re.compile(r"\s+(?:\||-|–|—|::|·|»)\s+")
_BYLINE_PREFIX = re.compile(r"^(?:by|von|par)(?:\s+|$)|^de\s+(?=\S+\s+\S)", re.IGNORECASE)
_NAME_SPLIT = re.compile(r"\s*(?:,|;|&|\band\b|\bund\b|\bet\b)\s*", re.IGNORECASE)
_BYLINE_XPATH = (
    "//*[contains(concat(' ', normalize-space(@rel), ' '), ' author ')"
    " or contains(concat(' ', normalize-space(@itemprop), ' '), ' author ')"
    " or contains(@class, 'byline') or contains(@class, 'author')"
    " or contains(@class, 'autor') or contains(@class, 'signature')]"
)


def is_site_name(text: str, site_names: Sequence[str]) -> bool:
    """Whether `text` is (close to) one of the site's names."""
    t = text.casefold().strip()
    return bool(t) and any(
        fuzz.ratio(t, n.casefold().strip()) >= SITE_NAME_MATCH for n in site_names if n
    )


def strip_site_name(text: str, site_names: Sequence[str]) -> str:
    """ "Headline | Site" or "Site - Headline" -> "Headline"; otherwise the text unchanged."""
    seps = list(_SEPARATOR.finditer(text))
    if not seps:
        return text
    if is_site_name(text[seps[-1].end() :], site_names):
        return text[: seps[-1].start()].strip()
    if is_site_name(text[: seps[0].start()], site_names):
        return text[seps[0].end() :].strip()
    return text


def _bylines(r: PageReader) -> list[str]:
    els = r.doc.xpath(_BYLINE_XPATH)
    chosen = set(els)
    # Outermost only: a link inside a byline is the same byline.
    outer = [e for e in els if not any(a in chosen for a in e.iterancestors())]
    return [t for e in outer[:10] if e.tag not in ("meta", "link") and (t := visible_text(e))]


def _names(r: PageReader, text: str) -> list[str]:
    """People named in a byline: "By A and B" -> [A, B]; site names and non-names dropped."""
    text = re.split(r"\s+[|·]\s+", clean(text))[0]
    text = _BYLINE_PREFIX.sub("", text)
    out = []
    for part in _NAME_SPLIT.split(text):
        name = _BYLINE_PREFIX.sub("", part).strip(" .:-")
        plausible = (
            name
            and len(name) <= 60
            and len(name.split()) <= 6
            and not any(ch.isdigit() for ch in name)
            and not re.search(r"https?:|www\.|@|/", name)
        )
        if plausible and not is_site_name(name, r.site_names):
            out.append(name)
    return out


def read_authors(
    r: PageReader, article: dict, mprops: dict, og: dict, resolve: Any
) -> tuple[tuple[str, ...], tuple[Candidate, ...], tuple[str, ...]]:
    """People named by JSON-LD, then microdata, then meta tags, then the visible byline (the
    first source naming anyone wins); organisations credited as JSON-LD authors apart."""
    people: list[Candidate] = []
    orgs: list[str] = []
    for value in as_list(article.get("author")):
        value = resolve(value)
        if isinstance(value, dict) and is_organization(value):
            orgs += [name] if (name := clean(value.get("name"))) else []
            continue
        name = value.get("name") if isinstance(value, dict) else value
        people += [Candidate(n, "jsonld") for n in _names(r, clean(first(name)))]
    for value in as_list(mprops.get("author")):
        if isinstance(value, dict):
            if is_organization(value):
                continue
            value = first(value.get("properties", {}).get("name"))
        people += [Candidate(n, "microdata") for n in _names(r, clean(value))]
    for value in [*r.meta("author"), og.get("article:author", "")]:
        people += [Candidate(n, "meta:author") for n in _names(r, value)]
    bylines = _bylines(r)
    if not bylines:
        r.missing.append("byline")
    for value in bylines:
        people += [Candidate(n, "byline") for n in _names(r, value)]
    authors: list[str] = []
    if people:
        source = people[0].source
        r.sources["authors"] = source
        for c in people:
            if c.source == source and c.value.casefold() not in {a.casefold() for a in authors}:
                authors.append(c.value)
    return tuple(authors), tuple(people), tuple(dict.fromkeys(orgs))
