"""Page understanding: what a saved page (or a live DOM's `page.content()`) says about itself.

`understand()` reads headline, authors, times, language, links, live-blog updates and
corrections from structured data (JSON-LD, microdata, OpenGraph, read by structured.py) and from the
visible page (lxml), keeping every candidate with the signal it came from. It also says what kind
of page it is (article, live blog, collection, home or other), its main heading, the story
teasers listed in its main content and the entries of an article's fact box ("Key facts").
Bad input never raises: the record lists what is `missing` and the `errors` met on the way.

Each concern has its module (page_bytes, bylines, headline, language, timestamps, updates,
listing, page_kind, factbox); this one combines them into a `PageRecord`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lxml import etree

from newsbench_dagster.core.reading.bylines import read_authors, site_names_of
from newsbench_dagster.core.reading.factbox import read_factbox
from newsbench_dagster.core.reading.headline import main_heading, read_headline
from newsbench_dagster.core.reading.language import read_language
from newsbench_dagster.core.reading.listing import read_listing
from newsbench_dagster.core.reading.metadata import ARTICLE_TYPES
from newsbench_dagster.core.reading.page_bytes import decode, parse_html, sniff_non_html
from newsbench_dagster.core.reading.page_kind import page_kind
from newsbench_dagster.core.reading.page_reader import (
    PageReader,
    clean,
    first,
    is_organization,
    schema_types,
)
from newsbench_dagster.core.reading.page_record import PageRecord
from newsbench_dagster.core.reading.timestamps import read_modified, read_published
from newsbench_dagster.core.reading.updates import (
    looks_live,
    read_corrections,
    read_live_entries,
    read_live_updates,
)


def understand(
    html: str | bytes,
    url: str | None = None,
    site_names: Sequence[str] = (),
    http_charset: str | None = None,
) -> PageRecord:
    """Read a saved page (bytes in their charset, or text) into a `PageRecord`. The charset an
    HTTP response declared, when given, is weighed with the page's own declaration."""
    try:
        return _understand(html, url, site_names, http_charset)
    except Exception as e:  # the last safety net: bad input is reported, never raised
        return PageRecord(
            url=url,
            is_html=False,
            encoding=None,
            missing=("everything",),
            errors=(f"internal: {type(e).__name__}: {e}",),
        )


def _understand(
    data: str | bytes, url: str | None, site_names: Sequence[str], http_charset: str | None
) -> PageRecord:
    everything = ("headline", "authors", "published", "language", "canonical")
    if (kind := sniff_non_html(data)) is not None:
        return PageRecord(
            url=url, is_html=False, encoding=None, missing=everything, errors=(f"input: {kind}",)
        )
    note, encoding = None, None
    if isinstance(data, bytes):
        text, encoding, note = decode(data, http_charset)
    else:
        text = data
    try:
        doc = parse_html(text)
    except (etree.ParserError, ValueError) as e:
        return PageRecord(
            url=url, is_html=False, encoding=encoding, missing=everything, errors=(f"html: {e}",)
        )
    r = PageReader(doc, url, site_names, text)
    r.errors += [note] if note else []

    nodes = r.guard("jsonld", r.jsonld, [])
    og = r.guard("opengraph", r.opengraph, {})
    items = r.guard("microdata", r.microdata, [])
    if not nodes:
        r.missing.append("jsonld")
    if not og:
        r.missing.append("opengraph")
    by_id = {n["@id"]: n for n in nodes if isinstance(n.get("@id"), str)}

    def resolve(value: Any) -> Any:
        # Yoast-style graphs refer to nodes by @id ({"@id": "#/schema/person/1"}).
        if isinstance(value, dict) and isinstance(value.get("@id"), str) and value["@id"] in by_id:
            return {**by_id[value["@id"]], **value}
        return value

    article = next((n for n in nodes if schema_types(n) & ARTICLE_TYPES), None) or {}
    micro = next(
        (i for i in items if schema_types(i) & ARTICLE_TYPES),
        next((i for i in items if "headline" in i.get("properties", {})), None),
    )
    mprops: dict[str, Any] = micro["properties"] if micro else {}

    # What the site calls itself (given, og:site_name, the JSON-LD publisher): never an author,
    # and not part of a headline.
    publisher = first(resolve(article.get("publisher")))
    publisher_name = clean(publisher.get("name")) if isinstance(publisher, dict) else ""
    micro_publisher = first(mprops.get("publisher"))
    if isinstance(micro_publisher, dict):
        micro_publisher = first(micro_publisher.get("properties", {}).get("name"))
    publisher_name = publisher_name or clean(micro_publisher)
    names = [*site_names, og.get("og:site_name", ""), publisher_name]
    names += [
        clean(n.get("name")) for n in nodes if "WebSite" in schema_types(n) or is_organization(n)
    ]
    r.site_names = [n for n in names if n]
    # The host's name strips a headline's affix, but a personal site's host may be its
    # author's name (hakibenita.com), so it never vetoes an author.
    r.host_names = site_names_of(url or r.link("canonical"))

    language = read_language(r, og, article)
    r.language = language  # the libraries read dates in it
    headline, heads = read_headline(r, article, mprops, og)
    authors, people, orgs = read_authors(r, article, mprops, og, resolve)
    published = read_published(r, article, og, mprops, language)
    modified = read_modified(r, article, og, mprops)

    blog = next((n for n in nodes if "LiveBlogPosting" in schema_types(n)), None)
    live_entries = tuple(read_live_entries(r)) if blog or looks_live(doc) else ()
    pinned_ids = {e.id for e in live_entries if e.pinned and e.id}
    live_updates = tuple(read_live_updates(blog, pinned_ids, resolve))
    timed = [u for u in (*live_entries, *live_updates) if not u.pinned and u.time]
    latest = max(timed, key=lambda u: u.time.utc, default=None)  # type: ignore[union-attr]

    canonical = r.link("canonical")
    if canonical:
        r.sources["canonical"] = "link[rel=canonical]"
    listing = tuple(r.guard("listing", lambda: read_listing(r), []))
    factbox_title, factbox = r.guard("factbox", lambda: read_factbox(r), (None, ()))
    types: set[str] = set()
    for node in [*nodes, *items]:
        types |= schema_types(node)
    kind = r.guard(
        "kind",
        lambda: page_kind(r, url or canonical, types, og, blog is not None, live_entries, listing),
        "other",
    )
    if blog:
        r.sources["is_liveblog"] = "jsonld"
    for what, value in (
        ("headline", headline),
        ("authors", authors),
        ("published", published),
        ("modified", modified),
        ("language", language),
        ("canonical", canonical),
    ):
        if not value:
            r.missing.append(what)
    return PageRecord(
        url=url,
        is_html=True,
        encoding=encoding,
        headline=headline,
        headline_candidates=heads,
        authors=authors,
        author_candidates=people,
        publisher_authors=orgs,
        publisher=publisher_name or og.get("og:site_name"),
        published=published,
        modified=modified,
        canonical=canonical,
        amp=r.link("amphtml"),
        language=language,
        is_liveblog=blog is not None,
        live_updates=live_updates,
        live_entries=live_entries,
        latest_update=latest,
        corrections=tuple(r.guard("corrections", lambda: read_corrections(r, language), [])),
        kind=kind,
        main_heading=r.guard("main_heading", lambda: main_heading(r), None),
        factbox=factbox,
        factbox_title=factbox_title,
        listing=listing,
        sources=r.sources,
        confidence=r.confidence,
        conflicts=r.conflicts,
        ambiguous=r.ambiguous,
        missing=tuple(r.missing),
        errors=tuple(r.errors),
    )
