"""A parsed page as the page-understanding modules read it: its structured data (JSON-LD,
OpenGraph, meta tags, microdata, links), its landmarks (main, <time> elements), what was
found missing or broken on the way, and the small text helpers every reader of a page uses."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from functools import cached_property
from typing import Any
from urllib.parse import urljoin

from newsbench_dagster.core.reading.evidence import Choice
from newsbench_dagster.core.reading.libraries import LibraryView, read_with_libraries
from newsbench_dagster.core.reading.metadata import flatten_jsonld
from newsbench_dagster.core.reading.structured import jsonld_values, microdata, opengraph

_WS = re.compile(r"\s+")
# An XPath test for a heading element: h1-h6, or an ARIA heading.
# An XPath expression (the {} in it) lower-cased: XPath 1.0 has no lower-case().
LOWERCASE = "translate({}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"
HEADING = "self::h1 or self::h2 or self::h3 or self::h4 or self::h5 or self::h6 or @role='heading'"


def clean(text: Any) -> str:
    """Entities unescaped, whitespace collapsed; "" for anything that is not a string."""
    return _WS.sub(" ", html.unescape(text)).strip() if isinstance(text, str) else ""


def first(value: Any) -> Any:
    """A list's first item (None when empty); anything else as it is."""
    if isinstance(value, list):
        return value[0] if value else None
    return value


def as_list(value: Any) -> list[Any]:
    """A JSON value as a list: a list as it is, None as [], anything else as [value]."""
    return value if isinstance(value, list) else [] if value is None else [value]


def visible_text(el: Any, skip_tags: Iterable[str] = (), skip_classes: Iterable[str] = ()) -> str:
    """Visible text of an element, leaving out some descendants (their tails stay)."""
    skip_tags, skip_classes = set(skip_tags) | {"script", "style"}, tuple(skip_classes)
    parts = [el.text or ""]
    # A stack, not recursion: hostile pages nest deeper than Python's recursion limit.
    stack: list[tuple[Any, bool]] = [(c, False) for c in reversed(el)]
    while stack:
        node, tail = stack.pop()
        if tail:
            parts.append(node.tail or "")
            continue
        stack.append((node, True))
        tag = node.tag if isinstance(node.tag, str) else ""  # comments have no str tag
        cls = (node.get("class") or "").lower() if tag else ""
        if tag and tag not in skip_tags and not any(c in cls for c in skip_classes):
            parts.append(node.text or "")
            stack.extend((c, False) for c in reversed(node))
    return _WS.sub(" ", " ".join(parts)).strip()


def schema_types(node: dict) -> set[str]:
    """The schema.org types of a JSON-LD node or microdata item, without their namespace."""
    raw = node.get("@type") or node.get("type")
    names = raw if isinstance(raw, list) else [raw]
    # "https://schema.org/NewsArticle" and "NewsArticle" are the same type.
    return {re.split(r"[/#:]", n)[-1] for n in names if isinstance(n, str)}


def is_organization(node: dict) -> bool:
    return any(t.endswith("Organization") or t == "Corporation" for t in schema_types(node))


# Elements that hold a byline: by role (rel/itemprop author), by class or id, or a link to an
# author's page.
BYLINE_XPATH = (
    "//*[contains(concat(' ', normalize-space(@rel), ' '), ' author ')"
    " or contains(concat(' ', normalize-space(@itemprop), ' '), ' author ')"
    " or contains(@class, 'byline') or contains(@class, 'author') or contains(@class, 'Author')"
    " or contains(@class, 'autor') or contains(@class, 'signature') or contains(@class, 'writer')"
    " or contains(@class, 'reporter') or contains(@id, 'byline') or contains(@id, 'author')"
    " or (self::a and (contains(@href, '/author/') or contains(@href, '/authors/')"
    " or contains(@href, '/autor/') or contains(@href, '/autoren/') or contains(@href, '/auteur/')"
    " or contains(@href, '/profile/') or contains(@href, '/staff/') or contains(@href, '/people/')"
    " or contains(@href, '/by/') or contains(@href, '/writers/') or contains(@href, '/reporters/')"
    " or contains(@href, '/journalist')))]"
)
# Real article pages are under 2 MB; past this the libraries' cost grows faster than the page.
LIBRARIES_MAX_CHARS = 3_000_000


class PageReader:
    """One page being read: the document, its URL and <base>, the names the site goes by, and
    the `errors`, `missing` fields and `sources` (field -> signal) gathered for the record."""

    def __init__(
        self, doc: Any, url: str | None, site_names: Sequence[str], text: str = ""
    ) -> None:
        self.doc = doc
        self.url = url
        self.text = text
        self.site_names = [n for n in site_names if n]
        self.host_names: list[str] = []
        self.language: str | None = None
        self.errors: list[str] = []
        self.missing: list[str] = []
        self.sources: dict[str, str] = {}
        self.confidence: dict[str, float] = {}
        self.conflicts: dict[str, list[str]] = {}
        self.ambiguous: dict[str, list[Any]] = {}
        base = first(doc.xpath("//base/@href"))
        self.base = urljoin(url or "", base) if isinstance(base, str) else url

    def chose(self, field_name: str, choice: Choice | None) -> Any:
        """Record a field's choice (source, confidence, dissenting sources, and the readings
        it is ambiguous between when it has rivals); its value."""
        if choice is None:
            return None
        self.sources[field_name] = choice.source
        self.confidence[field_name] = choice.confidence
        if choice.dissent:
            self.conflicts[field_name] = list(choice.dissent)
        if choice.rivals:
            self.ambiguous[field_name] = [choice.value, *choice.rivals]
        return choice.value

    @cached_property
    def libraries(self) -> LibraryView:
        """What trafilatura and htmldate read from this page (empty when they fail, and on
        pages over LIBRARIES_MAX_CHARS, where they take seconds per megabyte)."""
        if not self.text:
            return LibraryView()
        if len(self.text) > LIBRARIES_MAX_CHARS:
            self.missing.append("libraries")
            return LibraryView()
        return self.guard(
            "libraries",
            lambda: read_with_libraries(self.text, self.url, self.language),
            LibraryView(),
        )

    def guard(self, what: str, fn: Any, default: Any) -> Any:
        # Third-party extractors meet arbitrary markup; one failing must not lose the rest.
        try:
            return fn()
        except Exception as e:
            self.errors.append(f"{what}: {type(e).__name__}: {e}")
            return default

    # structured data
    def jsonld(self) -> list[dict]:
        nodes: list[dict] = []
        scripts = self.doc.xpath('//script[@type="application/ld+json"]')
        for i, script in enumerate(scripts, start=1):
            # Block by block, so one broken block is reported and the others are kept.
            try:
                flatten_jsonld(jsonld_values(script.xpath("string()")), nodes)
            except Exception as e:
                self.errors.append(f"jsonld: malformed block {i}: {e}")
        return nodes

    def opengraph(self) -> dict[str, str]:
        props: dict[str, str] = {}
        for key, value in opengraph(self.doc):
            if clean(value):
                props.setdefault(key.lower(), clean(value))
        return props

    def meta(self, *names: str) -> list[str]:
        wanted = " or ".join(f"@name='{n}' or @property='{n}'" for n in names)
        return [clean(v) for v in self.doc.xpath(f"//meta[{wanted}]/@content") if clean(v)]

    def meta_ci(self, name: str) -> list[str]:
        """Meta contents by name or property, case-insensitively (`name` lower-case)."""
        return self._meta_by_key.get(name, [])

    @cached_property
    def _meta_by_key(self) -> dict[str, list[str]]:
        # One pass over the meta tags: the date readers ask for ~17 names per page.
        out: dict[str, list[str]] = {}
        for el in self.doc.xpath("//meta[@name or @property]"):
            # A few sites write `value=` where the standard says `content=`.
            value = clean(el.get("content") if el.get("content") is not None else el.get("value"))
            if not value:
                continue
            keys = {(el.get(a) or "").strip().lower() for a in ("name", "property")} - {""}
            for key in keys:
                out.setdefault(key, []).append(value)
        return out

    def microdata(self) -> list[dict]:
        items: list[dict] = []

        def walk(value: Any) -> None:
            if isinstance(value, list):
                for v in value:
                    walk(v)
            elif isinstance(value, dict) and "properties" in value:
                items.append(value)
                for v in value["properties"].values():
                    walk(v)

        walk(microdata(self.doc, self.base))
        return items

    def link(self, rel: str) -> str | None:
        for el in self.doc.xpath("//link[@rel and @href]"):
            href = el.get("href").strip()
            if rel in el.get("rel", "").lower().split() and href:
                try:
                    return urljoin(self.base or "", href)
                except ValueError:  # e.g. a broken IPv6 host: keep what the page says
                    return href
        return None

    # landmarks
    @cached_property
    def main(self) -> Any:
        # descendant::...[1], not a union: libxml2 merges unions slowly on 10 MB pages.
        return first(self.doc.xpath("descendant::*[self::main or @role='main'][1]"))

    @cached_property
    def byline_elements(self) -> list[Any]:
        # One query: its contains() tests cost seconds on a 10 MB page.
        return self.doc.xpath(BYLINE_XPATH)

    @cached_property
    def time_elements(self) -> list[Any]:
        scope = self.main if self.main is not None else self.doc
        return scope.xpath(".//time") or self.doc.xpath("//time")
