"""Reading feeds, sitemaps and homepages into items: what the producer sees of a site.

RSS 0.9x/1.0/2.0 and Atom are parsed by feedparser, JSON Feed by `json`, sitemaps (news,
video, image, index) and homepages by lxml. Bytes are normalised first in `parse_document`
(with `feed_bytes`): gzip is inflated, oversized documents refused, wrong or missing charsets
repaired, and the format sniffed in one place (`sniff_kind`). A document that cannot be read
yields a `ParsedFeed` with `error` set, never an exception: one broken feed must not stop the
poll of a site. Nothing here touches the network: a sitemap index lists its children, it does
not fetch them.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from time import struct_time
from typing import Any
from urllib.parse import urljoin, urlsplit

import feedparser
from lxml import etree

from newsbench_dagster.core.reading.page_bytes import BINARY_MAGIC, decode, parse_html
from newsbench_dagster.core.reading.text import parse_time
from newsbench_dagster.core.web.feed_bytes import (
    BOMS,
    MAX_DOCUMENT_BYTES,
    decode_text,
    entity_declarations,
    gunzip,
    header_charset,
    strip_bom,
    too_big,
    utf8_xml,
)

JSONFEED_VERSION_PREFIX = "https://jsonfeed.org/version/"

_COMMENT = re.compile(rb"<!--.*?(-->|$)", re.S)
_FIRST_TAG = re.compile(rb"<([a-z_][\w:.\-]*)")
_ROOTS = {
    b"sitemapindex": "sitemap_index",
    b"urlset": "sitemap",
    b"feed": "atom",
    b"rss": "rss",
    b"rdf": "rss",
    b"html": "homepage",
}
# A tag or comment; "< 5%" in a headline is not one.
_TAG = re.compile(r"<(?:/?([A-Za-z][A-Za-z0-9]*)|[!?])[^<>]*>")
_INLINE_TAGS = frozenset(
    {"a", "abbr", "b", "bdi", "cite", "code", "em", "font", "i", "mark", "q", "s", "small"}
    | {"span", "strong", "sub", "sup", "time", "u"}
)


@dataclass
class FeedItem:
    title: str | None
    url: str | None
    published: datetime | None  # aware, UTC
    language: str | None
    # What the link is: on a homepage a "story", a "section" in the navigation, or a "live"
    # blog; in a sitemap index a child "sitemap" to follow. Feeds and sitemaps list stories.
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
    kind: str  # rss | atom | jsonfeed | sitemap | sitemap_index | homepage
    items: list[FeedItem] = field(default_factory=list)
    language: str | None = None
    error: str | None = None  # nothing could be read
    warning: str | None = None  # items were salvaged from a document with this problem


# -- sniffing and normalising bytes --------------------------------------------------------
def sniff_kind(content: bytes, headers: dict[str, str] | None = None) -> str:
    """Guess what a document is from its Content-Type and first element: jsonfeed,
    sitemap_index, sitemap, atom, rss or homepage (HTML)."""
    ctype = (headers or {}).get("content-type", "").lower()
    head = strip_bom(content[:4096]).lstrip()
    if head[:1] in (b"{", b"[") or "application/feed+json" in ctype:
        return "jsonfeed"
    if "json" in ctype and not head.startswith(b"<"):
        return "jsonfeed"
    # The root element decides: an RSS feed may carry <feedburner:info> or an embedded
    # <atom:link>, so a substring test would misfile it.
    lower = _COMMENT.sub(b"", head).lower()
    if b"<!doctype html" in lower:
        return "homepage"
    if root := _FIRST_TAG.search(lower):
        local = root.group(1).rpartition(b":")[2]
        if local in _ROOTS:
            return _ROOTS[local]
    if b"<html" in lower:
        return "homepage"
    return "rss"  # let feedparser decide and report


def parse_document(
    content: bytes, base_url: str, kind: str | None = None, headers: dict[str, str] | None = None
) -> ParsedFeed:
    """Parse a feed, sitemap or homepage; `headers` (lower-cased) carry the declared charset.

    `kind` is what the caller expects (a site's configuration); the bytes decide between
    look-alikes: a configured sitemap may be an index, a configured feed a JSON Feed.
    """
    if len(content) > MAX_DOCUMENT_BYTES:
        return ParsedFeed(kind=kind or "rss", error=too_big("document", len(content)))
    if content[:2] == b"\x1f\x8b":
        content, problem = gunzip(content)
        if problem:
            return ParsedFeed(kind=kind or "sitemap", error=problem)
    sniffed = sniff_kind(content, headers)
    kind = _resolve_kind(kind, sniffed)
    if not strip_bom(content).strip():
        return ParsedFeed(kind=kind, error="empty document")
    if kind == "homepage":
        return parse_homepage(content, base_url, headers)
    if problem := _not_a_feed(content, sniffed):
        return ParsedFeed(kind=kind, error=problem)
    if kind == "jsonfeed":
        return parse_jsonfeed(content, base_url, headers)
    if kind in ("sitemap", "sitemap_index"):
        return parse_sitemap(content, base_url, headers)
    return parse_feed(content, base_url, kind, headers)


def _resolve_kind(expected: str | None, sniffed: str) -> str:
    if expected is None or expected == "homepage":
        return expected or sniffed
    # The root element is unambiguous for these; "rss" is also the sniffer's don't-know.
    if sniffed in ("jsonfeed", "sitemap", "sitemap_index", "atom"):
        return sniffed
    return expected


def _not_a_feed(content: bytes, sniffed: str) -> str | None:
    """Why bytes handed over as a feed or sitemap are something else, or None."""
    for magic, what in BINARY_MAGIC.items():
        if content.startswith(magic):
            return f"not a feed: a {what}"
    head = content[:1024]
    if b"\x00" in head and not any(head.startswith(bom) for bom, _ in BOMS):
        return "not a feed: binary data"
    if sniffed == "homepage":  # an error or login page served in place of the feed
        title = re.search(rb"<title[^>]*>(.*?)</title", content[:65536], re.I | re.S)
        name = _plain(title.group(1).decode("utf-8", "replace")) if title else None
        return "not a feed: an HTML page" + (f" ({name!r})" if name else "")
    return None


# -- text ------------------------------------------------------------------------------------
def _plain(text: str | None) -> str | None:
    """A title as plain text: markup dropped, entities (even double-escaped) resolved,
    whitespace collapsed. Publishers put <b>, &amp;lt; and CDATA'd HTML in titles."""
    if not text:
        return None
    for _ in range(3):  # "&amp;lt;b&amp;gt;" needs two rounds; stop once stable
        stripped = _TAG.sub(_tag_gap, text) if "<" in text else text
        unescaped = html.unescape(stripped)
        if unescaped == text:
            break
        text = unescaped
    return " ".join(text.split()) or None


def _tag_gap(m: re.Match[str]) -> str:
    # "<b>Live:</b> talks" must not become "Live : talks"; "a<br>b" must not become "ab".
    name = m.group(1).lower() if m.group(1) else ""
    return "" if name in _INLINE_TAGS else " "


def _iso_time(value: str | None) -> datetime | None:
    """Sitemaps and JSON Feed use W3C/RFC 3339 times: the stdlib reads those 20x faster than
    dateutil, which a 50,000-URL sitemap notices; anything else goes to `parse_time`."""
    if not value:
        return None
    try:
        dt = datetime.fromisoformat(value.strip())
        return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError):
        return parse_time(value)


def _when(parsed: struct_time | None, raw: str | None) -> datetime | None:
    """feedparser's UTC struct_time (it reads RFC 822, W3CDTF and worse), else the raw string."""
    if parsed is not None:
        try:
            return datetime(*parsed[:6], tzinfo=UTC)
        except (TypeError, ValueError):
            pass
    return parse_time(raw)


def _resolve(base: str, link: str | None) -> str | None:
    """`link` made absolute; None for a malformed one ("http://[oops") nothing can fetch."""
    if not link or not link.strip():
        return None
    try:
        url = urljoin(base, link.strip())
        urlsplit(url)  # what callers do next; it raises where urljoin let it through
    except ValueError:
        return None
    return url


def _merge(*notes: str | None) -> str | None:
    return "; ".join(n for n in notes if n) or None


# -- formats -----------------------------------------------------------------------------------
def parse_feed(
    content: bytes, base_url: str, kind: str = "rss", headers: dict[str, str] | None = None
) -> ParsedFeed:
    """RSS 0.9x/1.0/2.0 or Atom. feedparser resolves xml:base and relative links against
    the feed URL (content-location); charsets are repaired before it sees the bytes."""
    body, charset_note = utf8_xml(content, headers)
    if refused := entity_declarations(body):
        return ParsedFeed(kind=kind, error=refused)
    response_headers = {
        "content-type": "application/xml; charset=utf-8",
        "content-location": base_url,
    }
    parsed = feedparser.parse(body, response_headers=response_headers)
    language = parsed.feed.get("language") or None
    items = []
    for entry in parsed.entries:
        link, title = entry.get("link"), _plain(entry.get("title"))
        if not link and not title:
            continue  # the cut-off tail of a truncated feed: nothing to point at
        items.append(
            FeedItem(
                title=title,
                url=_resolve(base_url, link),
                # Atom: published is the story's time; updated only when it is missing.
                published=_when(entry.get("published_parsed"), entry.get("published"))
                or _when(entry.get("updated_parsed"), entry.get("updated")),
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
        kind="atom" if version.startswith("atom") else "rss" if version else kind,
        items=items,
        language=language,
        warning=_merge(problem, charset_note),
    )


def parse_jsonfeed(
    content: bytes, base_url: str, headers: dict[str, str] | None = None
) -> ParsedFeed:
    """JSON Feed 1.0/1.1 (https://www.jsonfeed.org/version/1.1/)."""
    text, charset_note = decode_text(content, headers)
    salvaged = None
    try:
        doc: Any = json.loads(text)
    except json.JSONDecodeError as e:
        doc, salvaged = _salvage_jsonfeed(text), f"not valid JSON: {e}"
        if doc is None:
            return ParsedFeed(kind="jsonfeed", error=salvaged)
    except RecursionError:  # "[[[[..." a million deep: hostile, not a feed
        return ParsedFeed(kind="jsonfeed", error="not valid JSON: nested too deeply")
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        return ParsedFeed(kind="jsonfeed", error="not a JSON Feed: no items list")
    version = str(doc.get("version") or "")
    unversioned = None
    if not version.startswith(JSONFEED_VERSION_PREFIX) and salvaged is None:
        unversioned = f"not a JSON Feed version: {version or 'missing'!r}"
    home = doc.get("home_page_url")
    base = _resolve(base_url, home if isinstance(home, str) else None) or base_url
    language = _str(doc.get("language"))
    items = []
    for item in doc["items"]:
        if not isinstance(item, dict):
            continue
        link = _str(item.get("url")) or _str(item.get("external_url"))
        title = _plain(_str(item.get("title")))
        if not link and not title:
            continue  # nothing to point a task at
        items.append(
            FeedItem(
                title=title,
                url=_resolve(base, link),
                published=_iso_time(_str(item.get("date_published")))
                or _iso_time(_str(item.get("date_modified"))),
                language=_str(item.get("language")) or language,
            )
        )
    warning = _merge(salvaged, unversioned, charset_note)
    if not items:
        return ParsedFeed(kind="jsonfeed", language=language, error=salvaged or "no items")
    return ParsedFeed(kind="jsonfeed", items=items, language=language, warning=warning)


def _str(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _salvage_jsonfeed(text: str) -> dict | None:
    """The complete items of a JSON Feed cut off mid-way (feed-level fields are lost)."""
    start = re.search(r'"items"\s*:\s*\[', text)
    if start is None:
        return None
    decoder, pos, items = json.JSONDecoder(), start.end(), []
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        try:
            item, pos = decoder.raw_decode(text, pos)
        except (json.JSONDecodeError, RecursionError):
            break
        items.append(item)
    return {"items": items} if items else None


def _name(tag: str) -> tuple[str, str]:
    """(vocabulary, local name) of a sitemap element. Publishers get the namespace URIs slightly
    wrong (http vs https, no version) or leave a prefix undeclared ("news:title", kept as is
    by the recovering parser), so match on the distinctive part."""
    namespace, _, local = tag[1:].rpartition("}") if tag.startswith("{") else ("", "", tag)
    prefix, _, rest = local.rpartition(":")
    if prefix:  # an undeclared prefix
        namespace, local = f"sitemap-{prefix}", rest
    for family in ("news", "video", "image"):
        if f"sitemap-{family}" in namespace:
            return family, local
    return "sitemap", local


def _fields(element: etree._Element) -> dict[tuple[str, str], str]:
    """(vocabulary, local name) -> first non-empty text under a <url> or <sitemap>."""
    out: dict[tuple[str, str], str] = {}
    for el in element.iter():
        if not isinstance(el.tag, str) or not el.text or not el.text.strip():
            continue  # comments and processing instructions have no str tag
        out.setdefault(_name(el.tag), el.text.strip())
    return out


def parse_sitemap(
    content: bytes, base_url: str, headers: dict[str, str] | None = None
) -> ParsedFeed:
    """A urlset (news, video or image sitemap) or a sitemap index, whose children are listed
    with role "sitemap" for the poller to follow. A truncated file is salvaged."""
    body, charset_note = utf8_xml(content, headers)
    if refused := entity_declarations(body):
        return ParsedFeed(kind="sitemap", error=refused)
    # No entity is declared (refused above); no DTD is loaded, nothing fetched.
    parser = etree.XMLParser(
        resolve_entities=False, load_dtd=False, no_network=True, recover=True, huge_tree=True
    )
    try:
        root = etree.fromstring(body, parser=parser)
    except etree.XMLSyntaxError as e:
        return ParsedFeed(kind="sitemap", error=f"not valid XML: {e}")
    if root is None:
        return ParsedFeed(kind="sitemap", error=f"not valid XML: {_first_error(parser)}")
    name = _name(root.tag)[1]
    if name not in ("urlset", "sitemapindex"):
        return ParsedFeed(kind="sitemap", error=f"not a sitemap: root is <{name}>")
    is_index = name == "sitemapindex"
    child = "sitemap" if is_index else "url"
    items = []
    for el in root:
        if isinstance(el.tag, str) and _name(el.tag)[1] == child:
            items.append(_sitemap_item(_fields(el), base_url, is_index))
    kind = "sitemap_index" if is_index else "sitemap"
    problem = f"malformed XML: {_first_error(parser)}" if len(parser.error_log) else None
    if not items:
        return ParsedFeed(kind=kind, error=problem or "no items")
    return ParsedFeed(
        kind=kind,
        items=items,
        language=items[0].language,
        warning=_merge(problem, charset_note),
    )


def _sitemap_item(f: dict[tuple[str, str], str], base_url: str, is_index: bool) -> FeedItem:
    loc = f.get(("sitemap", "loc"))
    # The best title a sitemap offers: news, then video; an image's title or caption describes
    # the picture, so it is a last resort.
    title = (
        f.get(("news", "title"))
        or f.get(("video", "title"))
        or f.get(("image", "title"))
        or f.get(("image", "caption"))
    )
    published = (
        f.get(("news", "publication_date"))
        or f.get(("video", "publication_date"))
        or f.get(("sitemap", "lastmod"))
    )
    return FeedItem(
        title=None if is_index else _plain(title),
        url=_resolve(base_url, loc),
        published=_iso_time(published),
        language=f.get(("news", "language")),
        role="sitemap" if is_index else "story",
    )


def _first_error(parser: etree.XMLParser) -> str:
    errors = parser.error_log
    return str(errors[0].message).strip() if len(errors) else "no root element"


# -- homepages ------------------------------------------------------------------------------
def parse_homepage(
    content: bytes, base_url: str, headers: dict[str, str] | None = None
) -> ParsedFeed:
    """Headline links under the main landmark, in page order (the lead first on most sites).

    The page is decoded as the oracle decodes pages (`page_bytes.decode`: BOM, the HTTP
    charset, then `<meta charset>`, a declaration the bytes contradict set aside): a page
    that says latin-1 and is UTF-8 must not give "CafÃ©" titles; the repair is the
    warning (so the `feed_items` rows and the asset's metadata say so)."""
    text, _, note = decode(content, header_charset(headers))
    try:
        doc = parse_html(text)
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
        url = _resolve(base_url, a.get("href"))
        text = " ".join(a.text_content().split())
        if url is None or urlsplit(url).netloc != host or url in seen or not text:
            continue
        seen.add(url)
        items.append(FeedItem(title=text, url=url, published=None, language=language))
    items += _navigation(doc, base_url, seen, language)
    return ParsedFeed(kind="homepage", items=items, language=language, warning=note)


_LIVE = re.compile(r"^(live\b|liveblog|live-?ticker|en direct|direct\b)", re.IGNORECASE)
_MAX_SECTION_WORDS = 4  # "Politics", "Sport & Leisure": a section label, not a sentence


def _navigation(doc, base_url: str, seen: set[str], language: str | None) -> list[FeedItem]:
    """The homepage's section links (in its <nav>) and live-blog links: what tasks about
    topic pages and live blogs start from."""
    host = urlsplit(base_url).netloc
    out: list[FeedItem] = []
    for a in doc.xpath("//a[@href]"):
        url = (_resolve(base_url, a.get("href")) or "").split("#", 1)[0]
        text = " ".join(a.text_content().split())
        if not url:
            continue
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
