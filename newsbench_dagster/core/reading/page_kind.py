"""What kind of page a page is: home, live blog, article, collection (a listing of stories)
or other, from its URL, its structured data and, failing those, its structure."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from newsbench_dagster.core.reading.metadata import ARTICLE_TYPES
from newsbench_dagster.core.reading.page_reader import PageReader
from newsbench_dagster.core.reading.page_record import LiveUpdate, Teaser

KINDS = ("article", "liveblog", "collection", "home", "other")
COLLECTION_TYPES = {"CollectionPage", "ItemList", "SearchResultsPage", "ProfilePage"}
HOME_PATHS = ("", "/", "/index.html", "/index.htm", "/index.php")


def page_kind(
    r: PageReader,
    url: str | None,
    types: set[str],
    og: dict,
    blog: bool,
    live_entries: Sequence[LiveUpdate],
    listing: Sequence[Teaser],
) -> str:
    """home (the URL's path is "/"), liveblog, article, collection or other: from JSON-LD and
    microdata types, og:type, then the page's structure (an article with its own h1; several
    story teasers under main)."""
    try:
        path = urlsplit(url).path if url else None
    except ValueError:  # e.g. a broken IPv6 host in a canonical link
        path = None
    if path is not None and path in HOME_PATHS:
        return "home"
    if blog or "LiveBlogPosting" in types:
        return "liveblog"
    if types & (ARTICLE_TYPES - {"LiveBlogPosting"}):
        return "article"
    # Visible entries are read only where the page looks live (see updates.looks_live).
    if sum(not e.pinned for e in live_entries) >= 2:
        return "liveblog"
    og_type = (og.get("og:type") or "").lower()
    if og_type == "article" or og_type.startswith("article:") or og.get("article:published_time"):
        return "article"
    if types & COLLECTION_TYPES:
        return "collection"
    scope = r.main if r.main is not None else r.doc
    # An article's own headline: an h1 inside an <article> that links nowhere.
    heading = "(self::h1 or (@role='heading' and @aria-level='1')) and not(.//a[@href])"
    if scope.xpath(f"descendant::article[descendant::*[{heading}]][1]") and len(listing) < 2:
        return "article"
    if len(listing) >= 2:
        return "collection"
    return "other"
