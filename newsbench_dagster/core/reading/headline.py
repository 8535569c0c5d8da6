"""A page's headline and main heading: every headline signal with where it came from, and the
one chosen (structured data first, the site's name stripped from titles)."""

from __future__ import annotations

from newsbench_dagster.core.reading.bylines import is_site_name, strip_site_name
from newsbench_dagster.core.reading.page_reader import PageReader, clean, first, visible_text
from newsbench_dagster.core.reading.page_record import Candidate

HEADLINE_ORDER = ("jsonld", "microdata", "og:title", "twitter:title", "h1", "title")
_LEVEL_1 = "descendant::*[self::h1 or (@role='heading' and @aria-level='1')][1]"


def main_heading(r: PageReader) -> str | None:
    """The h1 (or role=heading aria-level=1) under main; with no main, the page's first."""
    found = (r.main if r.main is not None else r.doc).xpath(_LEVEL_1)
    return (visible_text(found[0]) or None) if found else None


def _h1(r: PageReader) -> str | None:
    found = r.main.xpath(_LEVEL_1) if r.main is not None else []
    found = found or r.doc.xpath("descendant::h1[1]")
    return visible_text(found[0]) if found else None


def read_headline(
    r: PageReader, article: dict, mprops: dict, og: dict
) -> tuple[str | None, tuple[Candidate, ...]]:
    """Every headline signal, and the chosen one: JSON-LD > microdata > og:title (site name
    stripped) > twitter:title > the main h1 > <title> (site name stripped)."""
    heads: list[Candidate] = []
    for source, value, strip in (
        ("jsonld", article.get("headline"), False),
        ("microdata", mprops.get("headline"), False),
        ("og:title", og.get("og:title"), True),
        ("twitter:title", first(r.meta("twitter:title")), True),
        ("h1", _h1(r), False),
        ("title", first(r.doc.xpath("//title/text()")), True),
    ):
        raw = clean(first(value))
        clean_value = strip_site_name(raw, r.site_names) if strip else raw
        # A <title> that is only the site's name says nothing about the story.
        if clean_value and not (strip and is_site_name(clean_value, r.site_names)):
            heads.append(Candidate(clean_value, source, raw if raw != clean_value else ""))
    if not heads:
        return None, ()
    chosen = min(heads, key=lambda c: HEADLINE_ORDER.index(c.source))
    r.sources["headline"] = chosen.source
    return chosen.value, tuple(heads)
