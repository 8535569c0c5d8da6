"""Who wrote a page, and what the site calls itself: the people named by JSON-LD, microdata,
meta tags or the visible byline (organisations credited as authors kept apart), and the site
names that are never an author and not part of a headline ("Headline | Site")."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from rapidfuzz import fuzz

from newsbench_dagster.core.reading.evidence import Vote, choose
from newsbench_dagster.core.reading.names import (
    LEAD_WORD,
    byline_names,
    is_agency,
    looks_organisation,
    same_people,
)
from newsbench_dagster.core.reading.page_reader import (
    PageReader,
    as_list,
    clean,
    first,
    is_organization,
    schema_types,
    visible_text,
)
from newsbench_dagster.core.reading.page_record import Candidate

SITE_NAME_MATCH = 90  # rapidfuzz ratio at or above which a byline is the site's name
# Separators between a headline and a site name in <title> and og:title.
_SEPARATOR = re.compile(r"\s+(?:\||-|–|—|::|·|»|_)\s+|\s+_|\s*[|｜：]\s*|(?<=\S)[:：](?=\S)")
# Parts of a page whose bylines belong to other stories or to readers.
_ELSEWHERE = re.compile(
    r"comment|related|recirc|footer|sidebar|widget|promo|newsletter|teaser|most-?popular|"
    r"trending|recommend|more-?from|more-?stories|outbrain|taboola|nav|menu|share|social|"
    r"author-?bio|about-?the-?author|bio-?box",
    re.IGNORECASE,
)
_ELSEWHERE_TAGS = {"footer", "nav", "aside", "header", "form"}
# How far each signal naming the authors is trusted (evidence.choose).
AUTHOR_WEIGHTS = {
    "jsonld": 3.0,
    "microdata": 3.0,
    "meta:author": 2.5,
    "byline": 2.0,
    "trafilatura": 2.0,
    "byline-text": 1.5,
}


def _site_key(text: str) -> str:
    """A site's name as a comparable key: accents, case, spaces and punctuation dropped."""
    decomposed = unicodedata.normalize("NFKD", text)
    return re.sub(r"[\W_]+", "", "".join(c for c in decomposed if not unicodedata.combining(c)))


_TLD = re.compile(r"(?:com|net|org|info|co|uk|de|fr|cz|jp|cn|it|es|nl|ru|pl|br|in|au|ca)$")


def is_site_name(text: str, site_names: Sequence[str]) -> bool:
    """Whether `text` is (close to) one of the site's names ("Aktuálně.cz" is "aktualne")."""
    t = text.casefold().strip()
    if not t:
        return False
    key = _site_key(t)
    for n in site_names:
        name = n.casefold().strip()
        if not name:
            continue
        if fuzz.ratio(t, name) >= SITE_NAME_MATCH:
            return True
        other = _site_key(name)
        if other and key and (key == other or _TLD.sub("", key) == other):
            return True
    return False


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


def affixes(text: str) -> list[str]:
    """The ways a title may split into a headline and a shorter site affix: the text before
    its last separator, or after its first ("A | B | Site" -> ["A | B", "B | Site"])."""
    seps = list(_SEPARATOR.finditer(text))
    if not seps:
        return []
    last, lead = seps[-1], seps[0]
    splits = [
        (text[: last.start()], text[last.end() :]),
        (text[lead.end() :], text[: lead.start()]),
    ]
    return [head.strip() for head, affix in splits if len(head.strip()) > len(affix.strip())]


def site_names_of(url: str | None) -> list[str]:
    """The names a URL's host gives a site: "zpravy.aktualne.cz" -> ["aktualne"]."""
    try:
        host = (urlsplit(url).hostname or "") if url else ""
    except ValueError:  # a broken IPv6 host names no site
        return []
    labels = [x for x in host.split(".") if x]
    if len(labels) < 2:
        return []
    # "bbc.co.uk", "abc.net.au": a short second-level label belongs to the suffix.
    cut = (
        3
        if len(labels) >= 3
        and labels[-2] in {"co", "com", "net", "org", "ac", "gov", "ne", "or", "go"}
        else 2
    )
    return [labels[-cut]] if len(labels) >= cut else []


def _elsewhere(el: Any, stop: Any) -> bool:
    """Whether an element sits in a comment thread, a list of other stories, a footer..."""
    node = el
    while node is not None and node is not stop:
        tag = node.tag if isinstance(node.tag, str) else ""
        marks = f"{node.get('class') or ''} {node.get('id') or ''}"
        if node is not el and tag in _ELSEWHERE_TAGS and tag != "header":
            return True
        if _ELSEWHERE.search(marks):
            return True
        node = node.getparent()
    return False


def _story_scope(r: PageReader) -> Any:
    """The element holding the story: the <article> (or main) around the main heading."""
    h1 = first(r.doc.xpath("descendant::h1[1]"))
    if h1 is not None:
        for a in h1.iterancestors():
            if a.tag in ("article", "main") or a.get("role") == "main":
                return a
    for scope in (first(r.doc.xpath("descendant::article[1]")), r.main):
        if scope is not None:
            return scope
    return r.doc


def _byline(r: PageReader) -> list[str]:
    """The people of the story's own byline: the first byline element in the story that names
    someone, with the other bylines beside it (several authors credited one by one)."""
    scope = _story_scope(r)
    els = [e for e in r.byline_elements if e.tag not in ("meta", "link", "script")]
    chosen = set(els)
    outer = [e for e in els if not any(a in chosen for a in e.iterancestors())]
    inside = [e for e in outer if scope is r.doc or scope in e.iterancestors() or e is scope]
    ordered = inside + [e for e in outer if e not in inside]
    for e in ordered[:40]:
        if _elsewhere(e, scope if e in inside else None):
            continue
        names = byline_names(visible_text(e))
        names = [n for n in names if not is_site_name(n, r.site_names)]
        if not names:
            continue
        # Authors credited one element each ("<span itemprop=author>" twice) share a parent.
        container = e.getparent()
        box = container.getparent() if container is not None else None
        for other in ordered[ordered.index(e) + 1 : 40]:
            near = other.getparent() is container or (
                box is not None and box in other.iterancestors() and len(visible_text(box)) < 400
            )
            if near and not _elsewhere(other, scope if other in inside else None):
                for n in byline_names(visible_text(other)):
                    if n.casefold() not in {x.casefold() for x in names}:
                        names.append(n)
        return names
    return []


def _byline_text(r: PageReader) -> list[str]:
    """A byline without markup: a short line starting "By ..." just after the main heading."""
    h1 = first(r.doc.xpath("descendant::h1[1]"))
    if h1 is None:
        return []
    seen = 0
    for el in h1.itersiblings():
        for node in el.iter():
            if not isinstance(node.tag, str) or node.tag in ("script", "style"):
                continue
            seen += 1
            if seen > 60:
                return []
            text = visible_text(node)
            if 3 < len(text) < 120 and LEAD_WORD.match(text):
                names = byline_names(text)
                if names:
                    return names
    return []


def _names(r: PageReader, text: str, lone_word_ok: bool = False) -> list[str]:
    """People named in a byline: "By A and B" -> [A, B]; site names and non-names dropped."""
    return [n for n in byline_names(text, lone_word_ok) if not is_site_name(n, r.site_names)]


def read_authors(
    r: PageReader, article: dict, mprops: dict, og: dict, resolve: Any
) -> tuple[tuple[str, ...], tuple[Candidate, ...], tuple[str, ...]]:
    """The people who wrote the page, voted on (`evidence.choose`, weights above): JSON-LD,
    microdata, meta tags, the story's byline, trafilatura's reading and a "By ..." line under
    the headline. Organisations and agencies credited as authors are kept apart."""
    orgs: list[str] = []
    found: dict[str, list[str]] = {source: [] for source in AUTHOR_WEIGHTS}

    def add(source: str, names: list[str]) -> None:
        for n in names:
            if n.casefold() not in {x.casefold() for x in found[source]}:
                found[source].append(n)

    for value in as_list(article.get("author")):
        value = resolve(value)
        if isinstance(value, dict) and is_organization(value):
            orgs += [name] if (name := clean(value.get("name"))) else []
            continue
        name = value.get("name") if isinstance(value, dict) else value
        text = clean(first(name))
        # Typed a Person, it is one, even named like the site (a personal blog's publisher).
        person = isinstance(value, dict) and "Person" in schema_types(value)
        names = byline_names(text, True) if person else _names(r, text, lone_word_ok=True)
        if not names and text and (is_agency(text) or looks_organisation(text)):
            orgs.append(text)
        add("jsonld", names)
    for value in as_list(mprops.get("author")):
        if isinstance(value, dict):
            if is_organization(value):
                continue
            value = first(value.get("properties", {}).get("name"))
        add("microdata", _names(r, clean(value), lone_word_ok=True))
    for value in [*r.meta("author"), og.get("article:author", "")]:
        add("meta:author", _names(r, value, lone_word_ok=True))
    add("byline", r.guard("byline", lambda: _byline(r), []))
    if not found["byline"]:
        if not r.byline_elements:
            r.missing.append("byline")
        add("byline-text", r.guard("byline-text", lambda: _byline_text(r), []))
    for value in r.libraries.authors:
        add("trafilatura", _names(r, value))
    # trafilatura reads the same markup: agreeing with a page signal it is an echo (no vote).
    own = [tuple(n) for source, n in found.items() if source != "trafilatura"]
    votes = [
        Vote(tuple(names), source, AUTHOR_WEIGHTS[source])
        for source, names in found.items()
        if source != "trafilatura" or not any(same_people(tuple(names), o) for o in own)
    ]
    chosen = r.chose("authors", choose(votes, same_people))
    people = tuple(Candidate(n, source) for source, names in found.items() for n in names)
    return tuple(chosen or ()), people, tuple(dict.fromkeys(orgs))
