"""Reading feeds, news sitemaps and homepages into items: what the producer sees of a site.

Feeds (RSS 0.9x/1.0/2.0, Atom) are parsed by feedparser; sitemaps and homepages by lxml.
A document that cannot be read yields a `ParsedFeed` with `error` set, never an exception:
one broken feed must not stop the poll of a site.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urljoin, urlsplit

import feedparser
from lxml import etree
from lxml import html as lxml_html

from newsbench_dagster.core.text import parse_time

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
NEWS_NS = "http://www.google.com/schemas/sitemap-news/0.9"


@dataclass
class FeedItem:
    title: str | None
    url: str | None
    published: datetime | None  # aware, UTC
    language: str | None
    # What the link is on a homepage: a "story", a "section" in the navigation, or a "live"
    # blog. Feeds and sitemaps list stories.
    role: str = "story"

    def as_json(self) -> dict:
        return {
            "title": self.title,
            "url": self.url,
            "published": self.published.isoformat() if self.published else None,
            "language": self.language,
            "role": self.role,
        }


@dataclass
class ParsedFeed:
    kind: str  # rss | atom | sitemap | homepage
    items: list[FeedItem] = field(default_factory=list)
    language: str | None = None
    error: str | None = None  # nothing could be read
    warning: str | None = None  # items were salvaged from a document with this problem


def sniff_kind(content: bytes) -> str:
    """Guess what a document is from its first element: sitemap, atom, rss or homepage (HTML)."""
    head = content[:2048].lstrip().lower()
    if b"<urlset" in head or b"<sitemapindex" in head:
        return "sitemap"
    if b"<feed" in head:
        return "atom"
    if b"<rss" in head or b"<rdf:rdf" in head:
        return "rss"
    if b"<html" in head or b"<!doctype html" in head:
        return "homepage"
    return "rss"  # let feedparser decide and report


def parse_document(
    content: bytes, base_url: str, kind: str | None = None, headers: dict[str, str] | None = None
) -> ParsedFeed:
    """Parse a feed, sitemap or homepage; `headers` (lower-cased) carry the declared charset."""
    kind = kind or sniff_kind(content)
    if not content.strip():
        return ParsedFeed(kind=kind, error="empty document")
    if kind == "sitemap":
        return parse_sitemap(content, base_url)
    if kind == "homepage":
        return parse_homepage(content, base_url)
    return parse_feed(content, base_url, kind, headers)


def parse_feed(
    content: bytes, base_url: str, kind: str = "rss", headers: dict[str, str] | None = None
) -> ParsedFeed:
    # A missing Content-Type is not the feed's fault when we read it from a file.
    response_headers = {
        "content-type": "application/xml",
        **(headers or {}),
        "content-location": base_url,
    }
    parsed = feedparser.parse(content, response_headers=response_headers)
    language = parsed.feed.get("language") or None
    items = []
    for entry in parsed.entries:
        link = entry.get("link")
        published = entry.get("published") or entry.get("updated")
        items.append(
            FeedItem(
                title=(entry.get("title") or "").strip() or None,
                url=urljoin(base_url, link) if link else None,
                published=parse_time(published),
                language=entry.get("language") or language,
            )
        )
    problem = f"not a valid feed: {parsed.get('bozo_exception')}" if parsed.get("bozo") else None
    if not items:
        if not parsed.get("version") and not problem:
            problem = "not a feed: no RSS or Atom root element"
        return ParsedFeed(kind=kind, language=language, error=problem or "no items")
    version = parsed.get("version") or ""
    # feedparser salvages what it can from a broken feed: keep the items, keep the complaint.
    return ParsedFeed(
        kind="atom" if version.startswith("atom") else kind,
        items=items,
        language=language,
        warning=problem,
    )


def parse_sitemap(content: bytes, base_url: str) -> ParsedFeed:
    try:
        root = etree.fromstring(content, parser=etree.XMLParser(resolve_entities=False))
    except etree.XMLSyntaxError as e:
        return ParsedFeed(kind="sitemap", error=f"not valid XML: {e}")
    if etree.QName(root).localname not in ("urlset", "sitemapindex"):
        return ParsedFeed(kind="sitemap", error=f"not a sitemap: root is <{root.tag}>")
    items = []
    for url_el in root.iter(f"{{{SITEMAP_NS}}}url", f"{{{SITEMAP_NS}}}sitemap"):
        loc = url_el.findtext(f"{{{SITEMAP_NS}}}loc")
        news = url_el.find(f"{{{NEWS_NS}}}news")
        title = published = language = None
        if news is not None:
            title = news.findtext(f"{{{NEWS_NS}}}title")
            published = news.findtext(f"{{{NEWS_NS}}}publication_date")
            language = news.findtext(f"{{{NEWS_NS}}}publication/{{{NEWS_NS}}}language")
        published = published or url_el.findtext(f"{{{SITEMAP_NS}}}lastmod")
        items.append(
            FeedItem(
                title=title.strip() if title else None,
                url=urljoin(base_url, loc.strip()) if loc else None,
                published=parse_time(published),
                language=language,
            )
        )
    return ParsedFeed(kind="sitemap", items=items, language=items[0].language if items else None)


def parse_homepage(content: bytes, base_url: str) -> ParsedFeed:
    """Headline links under the main landmark, in page order (the lead first on most sites)."""
    try:
        doc = lxml_html.fromstring(content, base_url=base_url)
    except (etree.ParserError, ValueError) as e:
        return ParsedFeed(kind="homepage", error=f"not valid HTML: {e}")
    language = doc.get("lang")
    mains = doc.xpath("//main | //*[@role='main']")
    scope = mains[0] if mains else doc
    items, seen = [], set()
    host = urlsplit(base_url).netloc
    # Story links sit in headings; section labels and "read more" links do not.
    for a in scope.xpath(
        ".//*[self::h1 or self::h2 or self::h3 or self::h4 or @role='heading']//a[@href]"
    ):
        url = urljoin(base_url, a.get("href"))
        text = " ".join(a.text_content().split())
        if urlsplit(url).netloc != host or url in seen or not text:
            continue
        seen.add(url)
        items.append(FeedItem(title=text, url=url, published=None, language=language))
    items += _navigation(doc, base_url, seen, language)
    return ParsedFeed(kind="homepage", items=items, language=language)


_LIVE = re.compile(r"^(live\b|liveblog|live-?ticker|en direct|direct\b)", re.IGNORECASE)
_MAX_SECTION_WORDS = 4  # "Politics", "Sport & Leisure": a section label, not a sentence


def _navigation(doc, base_url: str, seen: set[str], language: str | None) -> list[FeedItem]:
    """The homepage's section links (in its <nav>) and live-blog links: what tasks about
    topic pages and live blogs start from."""
    host = urlsplit(base_url).netloc
    out: list[FeedItem] = []
    for a in doc.xpath("//a[@href]"):
        url = urljoin(base_url, a.get("href")).split("#", 1)[0]
        text = " ".join(a.text_content().split())
        parts = urlsplit(url)
        if parts.netloc != host or parts.path in ("", "/") or url in seen or not text:
            continue
        if _LIVE.match(text) or "/live/" in parts.path:
            role = "live"
        elif a.xpath("ancestor::nav") and len(text.split()) <= _MAX_SECTION_WORDS:
            role = "section"
        else:
            continue
        seen.add(url)
        out.append(FeedItem(title=text, url=url, published=None, language=language, role=role))
    return out
