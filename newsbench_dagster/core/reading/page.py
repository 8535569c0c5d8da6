"""Page understanding: what a saved page (or a live DOM's `page.content()`) says about itself.

`understand()` reads headline, authors, times, language, links, live-blog updates and
corrections from structured data (JSON-LD, microdata, OpenGraph, read by extruct) and from the
visible page (lxml), keeping every candidate with the signal it came from. It also says what kind
of page it is (article, live blog, collection, home or other), its main heading, the story
teasers listed in its main content and the entries of an article's fact box ("Key facts").
Bad input never raises: the record lists what is `missing` and the `errors` met on the way.

`dateparser` (language-aware human dates) is optional: without it only machine-readable
timestamps are read, by python-dateutil.
"""

from __future__ import annotations

import codecs
import html
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from itertools import islice
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

import lxml.html
from charset_normalizer import from_bytes
from dateutil import parser as dateutil_parser
from extruct.jsonld import JsonLdExtractor
from extruct.opengraph import OpenGraphExtractor
from extruct.w3cmicrodata import MicrodataExtractor
from lxml import etree
from rapidfuzz import fuzz

from newsbench_dagster.core.reading.metadata import ARTICLE_TYPES, flatten_jsonld

try:  # optional: human-readable dates in the page's language ("30. November 2026, 15:04 Uhr")
    import dateparser
    from dateparser.search import search_dates
except ImportError:  # pragma: no cover - exercised only where dateparser is not installed
    dateparser = None
    search_dates = None

SITE_NAME_MATCH = 90  # rapidfuzz ratio at or above which a byline is the site's name
# Separators between a headline and a site name in <title> and og:title.
_SEPARATOR = re.compile(r"\s+(?:\||-|–|—|::|·|»)\s+")
_WS = re.compile(r"\s+")
_BYLINE_PREFIX = re.compile(r"^(?:by|von|par)(?:\s+|$)|^de\s+(?=\S+\s+\S)", re.IGNORECASE)
_NAME_SPLIT = re.compile(r"\s*(?:,|;|&|\band\b|\bund\b|\bet\b)\s*", re.IGNORECASE)
_YEAR = re.compile(r"\d{4}")
_LANG = re.compile(r"^[a-z]{2,3}(?:-[a-z0-9]{2,8})*$", re.IGNORECASE)
_CHARSET = re.compile(rb"<meta[^>]+?charset\s*=\s*[\"']?\s*([a-zA-Z0-9_.:-]+)", re.IGNORECASE)
_HTML_HINT = re.compile(
    r"<(?:!doctype\s+html|html|head|body|title|meta|main|article|div|p|h[1-6])\b", re.IGNORECASE
)
_XML_ROOT = re.compile(
    r"(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:rss|feed|urlset|sitemapindex|rdf:RDF)\b", re.S
)
_PIN_LABEL = re.compile(r"📌|^\s*(?:pinned|épinglé|angeheftet|angepinnt|fixiert)\b", re.IGNORECASE)
_BYLINE_XPATH = (
    "//*[contains(concat(' ', normalize-space(@rel), ' '), ' author ')"
    " or contains(concat(' ', normalize-space(@itemprop), ' '), ' author ')"
    " or contains(@class, 'byline') or contains(@class, 'author')"
    " or contains(@class, 'autor') or contains(@class, 'signature')]"
)
_CORRECTION_WORDS = ("correction", "korrektur", "rectificatif", "erratum")
_HEADING = "self::h1 or self::h2 or self::h3 or self::h4 or self::h5 or self::h6 or @role='heading'"
_LOWER = "translate({}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"
# Fact boxes: what their class or id says, or what their own heading or caption reads.
FACTBOX_CLASS_WORDS = (
    "factbox",
    "fact-box",
    "fact_box",
    "infobox",
    "info-box",
    "key-facts",
    "keyfacts",
    "key_facts",
    "key-points",
    "keypoints",
    "key_points",
    "fakten",
    "essentiel",
)
FACTBOX_TITLE = re.compile(
    r"(?:the\s+)?(?:key|quick|fast|main)\s+(?:facts|points)|(?:the\s+)?facts?(?:\s*box)?"
    r"|fact\s*(?:box|file|sheet)|(?:facts\s+)?at\s+a\s+glance|in\s+brief"
    r"|auf\s+einen\s+blick|(?:die\s+)?(?:wichtigsten\s+)?fakten|faktenbox|das\s+wichtigste"
    r"(?:\s+in\s+kürze)?|in\s+kürze|steckbrief"
    r"|l'essentiel|en\s+bref|rep[èe]res|(?:les\s+)?chiffres[\s-]cl[ée]s|en\s+chiffres"
    r"|ce\s+qu'il\s+faut\s+(?:retenir|savoir)",
    re.IGNORECASE,
)
_FACT_TRAIL = re.compile(r"[\s:：]+$")
_FACT_LEAD = re.compile(r"^[\s:：]+")
_LABEL_TAGS = {"strong", "b", "dfn", "em", "span", "dt", "label", "th"}
_BOX_TAGS = {"aside", "section", "div", "figure", "table"}
_TITLE_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6", "caption", "figcaption", "legend", "summary"}
_TITLE_TAGS |= {"p", "strong", "b", "span"}  # "<p><strong>Key facts</strong></p>"
_LIST_TAGS = {"dl", "table", "ul", "ol"}
# Teasers in a listing: what to leave out, and what a summary is not.
_OUTSIDE_LISTING = {"nav", "aside", "footer"}
_OUTSIDE_ROLES = {"navigation", "complementary", "contentinfo", "banner", "search"}
# Sponsored blocks, and other stories' blocks that are not the page's own listing.
_NOT_LISTING_CLASS = re.compile(
    r"sponsor|promo|advert|\bads?\b|related|most-?read|popular|populaire|meistgelesen|trending"
    r"|recommend",
    re.IGNORECASE,
)
# Whole words of a class ("card-section", "breve__date"), not parts ("stage", "update").
_NOT_SUMMARY_CLASS = re.compile(
    r"(?<![a-z])(?:byline|author|autor|signature|date|dateline|datetime|datum|time|timestamp"
    r"|kicker|surtitre|dachzeile|topline|rubri[a-z]*|label|meta|credit|section|tags?)(?![a-z])",
    re.IGNORECASE,
)
_SUMMARY_CLASS = ("summary", "excerpt", "standfirst", "dek", "chapo", "teaser-text", "lede")
LISTING_LIMIT = 500  # teasers kept at most (a hostile page may have 100,000)
KINDS = ("article", "liveblog", "collection", "home", "other")
COLLECTION_TYPES = {"CollectionPage", "ItemList", "SearchResultsPage", "ProfilePage"}
HOME_PATHS = ("", "/", "/index.html", "/index.htm", "/index.php")
_NOT_CONTENT = {"a", "button", "form", "input", "link", "meta", "script", "style", "template"}


@dataclass(frozen=True)
class Candidate:
    value: str  # cleaned (whitespace collapsed, site name stripped where that applies)
    source: str  # the signal: "jsonld", "microdata", "og:title", "meta:author", "byline", ...
    raw: str = ""  # as found, when cleaning changed it


@dataclass(frozen=True)
class Timestamp:
    utc: datetime  # aware, UTC
    raw: str  # as written on the page
    offset: str | None  # "+01:00" as written; None when no zone was given (read as UTC)
    source: str

    def iso(self) -> str:
        return self.utc.isoformat()


@dataclass(frozen=True)
class LiveUpdate:
    id: str | None
    time: Timestamp | None
    text: str
    pinned: bool
    source: str  # "jsonld" (liveBlogUpdate) or "page" (a visible entry)


@dataclass(frozen=True)
class Correction:
    text: str
    time: Timestamp | None


@dataclass(frozen=True)
class Fact:
    label: str  # whitespace normalised, trailing colon stripped
    value: str


@dataclass(frozen=True)
class Teaser:
    headline: str
    url: str  # absolute, resolved against the page's URL (or its <base>)
    summary: str | None  # a nearby paragraph, when the teaser shows one


@dataclass(frozen=True)
class PageRecord:
    url: str | None
    is_html: bool
    encoding: str | None
    headline: str | None = None
    headline_candidates: tuple[Candidate, ...] = ()
    authors: tuple[str, ...] = ()  # people only
    author_candidates: tuple[Candidate, ...] = ()
    publisher_authors: tuple[str, ...] = ()  # JSON-LD authors that are organisations
    publisher: str | None = None
    published: Timestamp | None = None
    modified: Timestamp | None = None
    canonical: str | None = None
    amp: str | None = None
    language: str | None = None  # BCP-47
    is_liveblog: bool = False
    live_updates: tuple[LiveUpdate, ...] = ()  # JSON-LD liveBlogUpdate
    live_entries: tuple[LiveUpdate, ...] = ()  # entries visible on the page
    latest_update: LiveUpdate | None = None  # newest non-pinned, by time
    corrections: tuple[Correction, ...] = ()
    # One of KINDS: from JSON-LD types, og:type, the URL path ("/" is home), else structure.
    kind: str = "other"
    main_heading: str | None = None  # the h1 (or aria-level 1 heading) under main
    factbox: tuple[Fact, ...] = ()  # the fact box's entries in page order; () when none
    factbox_title: str | None = None  # its heading or caption ("Key facts")
    listing: tuple[Teaser, ...] = ()  # story teasers under main, in page order
    sources: dict[str, str] = field(default_factory=dict)  # field -> signal it came from
    missing: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        def plain(value: Any) -> Any:
            if isinstance(value, datetime):
                return value.isoformat()
            if isinstance(value, dict):
                return {k: plain(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [plain(v) for v in value]
            return value

        return plain(asdict(self))


# -- input ---------------------------------------------------------------------------------
# Leading bytes of what servers hand out in place of a page or a feed (also read by feeds).
BINARY_MAGIC = {
    b"\x89PNG": "PNG image",
    b"%PDF": "PDF document",
    b"GIF8": "GIF image",
    b"\xff\xd8\xff": "JPEG image",
    b"PK\x03\x04": "ZIP archive",
    b"\x1f\x8b": "gzip stream",
    b"RIFF": "RIFF media file",
}


def sniff_non_html(data: bytes | str) -> str | None:
    """What the input is when it is clearly not an HTML page ("PNG image", "empty"), else None."""
    head = data[:4096] if isinstance(data, bytes) else data[:4096].encode("utf-8", "replace")
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not stripped:
        return "empty"
    for prefix, what in BINARY_MAGIC.items():
        if stripped.startswith(prefix):
            return what
    if stripped[:1] in (b"{", b"["):
        try:
            json.loads(data)
            return "JSON"
        except ValueError:
            pass
    if b"\x00" in head and not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "binary data"
    text = data[:65536] if isinstance(data, str) else decode(data[:65536])[0]
    if _XML_ROOT.match(text.lstrip("\ufeff \t\r\n")):
        return "XML feed or sitemap"
    if not _HTML_HINT.search(text):
        return "no HTML markup"
    return None


def _codec(label: str) -> str | None:
    """A Python codec for a declared charset label, as browsers map it (latin-1 is cp1252)."""
    label = label.strip().lower()
    if label in ("iso-8859-1", "iso8859-1", "latin1", "latin-1", "us-ascii", "ascii"):
        return "cp1252"
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    # An ASCII-readable document cannot really be UTF-16/32 (a BOM would have said so).
    return "utf-8" if name.startswith(("utf-16", "utf-32")) else name


def decode(data: bytes) -> tuple[str, str, str | None]:
    """Text, the codec used and a complaint: BOM, then the declared charset, then a guess."""
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if data.startswith(bom):
            return data[len(bom) :].decode(name, "replace"), name, None
    match = _CHARSET.search(data[:4096])
    declared = _codec(match.group(1).decode("ascii", "replace")) if match else None
    if declared:
        try:
            return data.decode(declared), declared, None
        except UnicodeDecodeError as e:
            # Mixed encodings happen (a latin-1 snippet pasted into a UTF-8 page): keep reading.
            note = f"encoding: bytes invalid in declared {declared} replaced (first at {e.start})"
            return data.decode(declared, "replace"), declared, note
    try:
        return data.decode("utf-8"), "utf-8", None
    except UnicodeDecodeError:
        pass
    best = from_bytes(data[:200_000]).best()
    name = best.encoding if best else "utf-8"
    return data.decode(name, "replace"), name, None


def _parse(text: str) -> Any:
    # Bytes with an explicit encoding: lxml rejects str with an XML declaration, and the
    # page's own <meta charset> must not re-decode what is already decoded.
    parser = lxml.html.HTMLParser(encoding="utf-8", huge_tree=True)
    return lxml.html.document_fromstring(text.encode("utf-8", "replace"), parser=parser)


# -- small helpers -------------------------------------------------------------------------
def _clean(text: Any) -> str:
    return _WS.sub(" ", html.unescape(text)).strip() if isinstance(text, str) else ""


def _first(value: Any) -> Any:
    """A list's first item (None when empty); anything else as it is."""
    if isinstance(value, list):
        return value[0] if value else None
    return value


def _text(el: Any, skip_tags: Iterable[str] = (), skip_classes: Iterable[str] = ()) -> str:
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


def _is_site(text: str, site_names: Sequence[str]) -> bool:
    t = text.casefold().strip()
    return bool(t) and any(
        fuzz.ratio(t, n.casefold().strip()) >= SITE_NAME_MATCH for n in site_names if n
    )


def strip_site_name(text: str, site_names: Sequence[str]) -> str:
    """ "Headline | Site" or "Site - Headline" -> "Headline"; otherwise the text unchanged."""
    seps = list(_SEPARATOR.finditer(text))
    if not seps:
        return text
    if _is_site(text[seps[-1].end() :], site_names):
        return text[: seps[-1].start()].strip()
    if _is_site(text[: seps[0].start()], site_names):
        return text[seps[0].end() :].strip()
    return text


def _types(node: dict) -> set[str]:
    raw = node.get("@type") or node.get("type")
    names = raw if isinstance(raw, list) else [raw]
    # "https://schema.org/NewsArticle" and "NewsArticle" are the same type.
    return {re.split(r"[/#:]", n)[-1] for n in names if isinstance(n, str)}


def _is_org(node: dict) -> bool:
    return any(t.endswith("Organization") or t == "Corporation" for t in _types(node))


def bcp47(tag: Any) -> str | None:
    """ "de_DE" / "EN-us" / "fr-ca" -> "de-DE" / "en-US" / "fr-CA"; None if not a language tag."""
    if not isinstance(tag, str) or not _LANG.match(tag.strip().replace("_", "-")):
        return None
    parts = tag.strip().replace("_", "-").split("-")
    out = [parts[0].lower()]
    for p in parts[1:]:
        if len(p) == 2 or (len(p) == 3 and p.isdigit()):
            out.append(p.upper())  # region
        elif len(p) == 4 and p.isalpha():
            out.append(p.title())  # script
        else:
            out.append(p.lower())
    return "-".join(out)


# -- times ---------------------------------------------------------------------------------
def _offset(dt: datetime) -> str | None:
    delta = dt.utcoffset()
    if delta is None:
        return None
    minutes = int(delta.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _stamp(dt: datetime, raw: str, source: str) -> Timestamp | None:
    try:
        offset = _offset(dt)
        utc = dt.astimezone(UTC) if dt.tzinfo else dt.replace(tzinfo=UTC)
    except (OverflowError, ValueError):
        return None
    return Timestamp(utc=utc, raw=raw, offset=offset, source=source)


def machine_time(raw: Any, source: str) -> Timestamp | None:
    """A machine-readable timestamp (ISO 8601 and the like) read by dateutil; None if unreadable."""
    text = _clean(raw if isinstance(raw, str) else _first(raw))
    if not text or not any(ch.isdigit() for ch in text):
        return None
    try:
        dt = dateutil_parser.isoparse(text)
    except (ValueError, OverflowError):
        try:
            dt = dateutil_parser.parse(text)
        except (ValueError, OverflowError, TypeError):
            return None
    return _stamp(dt, text, source)


def human_time(raw: str, language: str | None, source: str) -> Timestamp | None:
    """A human-readable date in the page's language, if dateparser is installed."""
    text = _clean(raw)[:200]
    if dateparser is None or not _YEAR.search(text):
        return None
    languages = [language.split("-")[0]] if language else None
    for langs in [languages, None] if languages else [None]:
        try:
            dt = dateparser.parse(text, languages=langs)
            if dt is None:
                found = search_dates(text, languages=langs) or []
                # Relative dates ("vor 2 Stunden") depend on when the page was saved: want a year.
                found = [(s, d) for s, d in found if _YEAR.search(s)]
                dt = found[0][1] if found else None
        except Exception:  # dateparser raises assorted errors on unsupported languages/input
            dt = None
        if dt is not None:
            return _stamp(dt, text, source)
    return None


# -- the reader ----------------------------------------------------------------------------
class _Reader:
    def __init__(self, doc: Any, url: str | None, site_names: Sequence[str]) -> None:
        self.doc = doc
        self.url = url
        self.site_names = [n for n in site_names if n]
        self.errors: list[str] = []
        self.missing: list[str] = []
        self.sources: dict[str, str] = {}
        base = _first(doc.xpath("//base/@href"))
        self.base = urljoin(url or "", base) if isinstance(base, str) else url

    def guard(self, what: str, fn: Any, default: Any) -> Any:
        # Third-party extractors meet arbitrary markup; one failing must not lose the rest.
        try:
            return fn()
        except Exception as e:
            self.errors.append(f"{what}: {type(e).__name__}: {e}")
            return default

    # structured data
    def jsonld(self) -> list[dict]:
        extractor = JsonLdExtractor()
        nodes: list[dict] = []
        scripts = self.doc.xpath('//script[@type="application/ld+json"]')
        for i, script in enumerate(scripts, start=1):
            # Block by block, so one broken block is reported and the others are kept.
            try:
                flatten_jsonld(extractor.extract_items(script), nodes)
            except Exception as e:
                self.errors.append(f"jsonld: malformed block {i}: {e}")
        return nodes

    def opengraph(self) -> dict[str, str]:
        props: dict[str, str] = {}
        for item in OpenGraphExtractor().extract_items(self.doc):
            for key, value in item["properties"]:
                if _clean(value):
                    props.setdefault(key.lower(), _clean(value))
        return props

    def meta(self, *names: str) -> list[str]:
        wanted = " or ".join(f"@name='{n}' or @property='{n}'" for n in names)
        return [_clean(v) for v in self.doc.xpath(f"//meta[{wanted}]/@content") if _clean(v)]

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

        walk(MicrodataExtractor().extract_items(self.doc, base_url=self.base))
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

    @cached_property
    def main(self) -> Any:
        # descendant::...[1], not a union: libxml2 merges unions slowly on 10 MB pages.
        return _first(self.doc.xpath("descendant::*[self::main or @role='main'][1]"))

    # visible page
    def main_heading(self) -> str | None:
        """The h1 (or role=heading aria-level=1) under main; with no main, the page's first."""
        heading = "descendant::*[self::h1 or (@role='heading' and @aria-level='1')][1]"
        found = (self.main if self.main is not None else self.doc).xpath(heading)
        return (_text(found[0]) or None) if found else None

    def h1(self) -> str | None:
        heading = "descendant::*[self::h1 or (@role='heading' and @aria-level='1')][1]"
        found = self.main.xpath(heading) if self.main is not None else []
        found = found or self.doc.xpath("descendant::h1[1]")
        return _text(found[0]) if found else None

    def bylines(self) -> list[str]:
        els = self.doc.xpath(_BYLINE_XPATH)
        chosen = set(els)
        # Outermost only: a link inside a byline is the same byline.
        outer = [e for e in els if not any(a in chosen for a in e.iterancestors())]
        return [t for e in outer[:10] if e.tag not in ("meta", "link") and (t := _text(e))]

    def names(self, text: str) -> list[str]:
        """People named in a byline: "By A and B" -> [A, B]; site names and non-names dropped."""
        text = re.split(r"\s+[|·]\s+", _clean(text))[0]
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
            if plausible and not _is_site(name, self.site_names):
                out.append(name)
        return out

    @cached_property
    def time_elements(self) -> list[Any]:
        scope = self.main if self.main is not None else self.doc
        return scope.xpath(".//time") or self.doc.xpath("//time")


def understand(
    html: str | bytes, url: str | None = None, site_names: Sequence[str] = ()
) -> PageRecord:
    """Read a saved page (bytes in their declared charset, or text) into a `PageRecord`."""
    try:
        return _understand(html, url, site_names)
    except Exception as e:  # the last safety net: bad input is reported, never raised
        return PageRecord(
            url=url,
            is_html=False,
            encoding=None,
            missing=("everything",),
            errors=(f"internal: {type(e).__name__}: {e}",),
        )


def _understand(data: str | bytes, url: str | None, site_names: Sequence[str]) -> PageRecord:
    everything = ("headline", "authors", "published", "language", "canonical")
    if (kind := sniff_non_html(data)) is not None:
        return PageRecord(
            url=url, is_html=False, encoding=None, missing=everything, errors=(f"input: {kind}",)
        )
    note, encoding = None, None
    if isinstance(data, bytes):
        text, encoding, note = decode(data)
    else:
        text = data
    try:
        doc = _parse(text)
    except (etree.ParserError, ValueError) as e:
        return PageRecord(
            url=url, is_html=False, encoding=encoding, missing=everything, errors=(f"html: {e}",)
        )
    r = _Reader(doc, url, site_names)
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

    article = next((n for n in nodes if _types(n) & ARTICLE_TYPES), None) or {}
    micro = next(
        (i for i in items if _types(i) & ARTICLE_TYPES),
        next((i for i in items if "headline" in i.get("properties", {})), None),
    )
    mprops: dict[str, Any] = micro["properties"] if micro else {}

    # What the site calls itself (given, og:site_name, the JSON-LD publisher): never an author,
    # and not part of a headline.
    publisher = _first(resolve(article.get("publisher")))
    publisher_name = _clean(publisher.get("name")) if isinstance(publisher, dict) else ""
    micro_publisher = _first(mprops.get("publisher"))
    if isinstance(micro_publisher, dict):
        micro_publisher = _first(micro_publisher.get("properties", {}).get("name"))
    publisher_name = publisher_name or _clean(micro_publisher)
    names = [*site_names, og.get("og:site_name", ""), publisher_name]
    names += [_clean(n.get("name")) for n in nodes if "WebSite" in _types(n) or _is_org(n)]
    r.site_names = [n for n in names if n]

    headline, heads = _headline(r, article, mprops, og)
    authors, people, orgs = _authors(r, article, mprops, og, resolve)
    language = _language(r, doc, og, article)
    published = _published(r, article, og, mprops, language)
    modified = _modified(r, article, og, mprops)

    blog = next((n for n in nodes if "LiveBlogPosting" in _types(n)), None)
    live_entries = tuple(_live_entries(r)) if blog or _looks_live(doc) else ()
    pinned_ids = {e.id for e in live_entries if e.pinned and e.id}
    live_updates = tuple(_live_updates(blog, pinned_ids, resolve))
    timed = [u for u in (*live_entries, *live_updates) if not u.pinned and u.time]
    latest = max(timed, key=lambda u: u.time.utc, default=None)  # type: ignore[union-attr]

    canonical = r.link("canonical")
    if canonical:
        r.sources["canonical"] = "link[rel=canonical]"
    listing = tuple(r.guard("listing", lambda: _listing(r), []))
    factbox_title, factbox = r.guard("factbox", lambda: _factbox(r), (None, ()))
    types: set[str] = set()
    for node in [*nodes, *items]:
        types |= _types(node)
    kind = r.guard(
        "kind",
        lambda: _kind(r, url or canonical, types, og, blog is not None, live_entries, listing),
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
        corrections=tuple(r.guard("corrections", lambda: _corrections(r, language), [])),
        kind=kind,
        main_heading=r.guard("main_heading", r.main_heading, None),
        factbox=factbox,
        factbox_title=factbox_title,
        listing=listing,
        sources=r.sources,
        missing=tuple(r.missing),
        errors=tuple(r.errors),
    )


HEADLINE_ORDER = ("jsonld", "microdata", "og:title", "twitter:title", "h1", "title")


def _headline(
    r: _Reader, article: dict, mprops: dict, og: dict
) -> tuple[str | None, tuple[Candidate, ...]]:
    """Every headline signal, and the chosen one: JSON-LD > microdata > og:title (site name
    stripped) > twitter:title > the main h1 > <title> (site name stripped)."""
    heads: list[Candidate] = []
    for source, value, strip in (
        ("jsonld", article.get("headline"), False),
        ("microdata", mprops.get("headline"), False),
        ("og:title", og.get("og:title"), True),
        ("twitter:title", _first(r.meta("twitter:title")), True),
        ("h1", r.h1(), False),
        ("title", _first(r.doc.xpath("//title/text()")), True),
    ):
        raw = _clean(_first(value))
        clean = strip_site_name(raw, r.site_names) if strip else raw
        # A <title> that is only the site's name says nothing about the story.
        if clean and not (strip and _is_site(clean, r.site_names)):
            heads.append(Candidate(clean, source, raw if raw != clean else ""))
    if not heads:
        return None, ()
    chosen = min(heads, key=lambda c: HEADLINE_ORDER.index(c.source))
    r.sources["headline"] = chosen.source
    return chosen.value, tuple(heads)


def _authors(
    r: _Reader, article: dict, mprops: dict, og: dict, resolve: Any
) -> tuple[tuple[str, ...], tuple[Candidate, ...], tuple[str, ...]]:
    """People named by JSON-LD, then microdata, then meta tags, then the visible byline (the
    first source naming anyone wins); organisations credited as JSON-LD authors apart."""
    people: list[Candidate] = []
    orgs: list[str] = []
    for value in _as_list(article.get("author")):
        value = resolve(value)
        if isinstance(value, dict) and _is_org(value):
            orgs += [name] if (name := _clean(value.get("name"))) else []
            continue
        name = value.get("name") if isinstance(value, dict) else value
        people += [Candidate(n, "jsonld") for n in r.names(_clean(_first(name)))]
    for value in _as_list(mprops.get("author")):
        if isinstance(value, dict):
            if _is_org(value):
                continue
            value = _first(value.get("properties", {}).get("name"))
        people += [Candidate(n, "microdata") for n in r.names(_clean(value))]
    for value in [*r.meta("author"), og.get("article:author", "")]:
        people += [Candidate(n, "meta:author") for n in r.names(value)]
    bylines = r.bylines()
    if not bylines:
        r.missing.append("byline")
    for value in bylines:
        people += [Candidate(n, "byline") for n in r.names(value)]
    authors: list[str] = []
    if people:
        source = people[0].source
        r.sources["authors"] = source
        for c in people:
            if c.source == source and c.value.casefold() not in {a.casefold() for a in authors}:
                authors.append(c.value)
    return tuple(authors), tuple(people), tuple(dict.fromkeys(orgs))


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [] if value is None else [value]


def _language(r: _Reader, doc: Any, og: dict, article: dict) -> str | None:
    in_language = article.get("inLanguage")
    if isinstance(in_language, dict):
        in_language = in_language.get("alternateName") or in_language.get("name")
    for source, value in (
        ("html[lang]", doc.get("lang") or doc.get("xml:lang")),
        ("og:locale", og.get("og:locale")),
        ("jsonld", _first(in_language)),
    ):
        if tag := bcp47(value):
            r.sources["language"] = source
            return tag
    return None


def _first_time(
    r: _Reader, field_name: str, candidates: Iterable[tuple[str, Any]]
) -> Timestamp | None:
    for source, value in candidates:
        if value and (stamp := machine_time(value, source)):
            r.sources[field_name] = source
            return stamp
    return None


def _published(
    r: _Reader, article: dict, og: dict, mprops: dict, language: str | None
) -> Timestamp | None:
    times = r.time_elements
    labelled = [
        t.get("datetime")
        for t in times
        if re.search(r"publish|created", f"{t.get('class')} {t.get('itemprop')}", re.I)
    ]
    stamp = _first_time(
        r,
        "published",
        [
            ("jsonld:datePublished", article.get("datePublished")),
            ("meta:article:published_time", og.get("article:published_time")),
            ("microdata:datePublished", mprops.get("datePublished")),
            *(("time[datetime]", v) for v in labelled),
            *(("time[datetime]", t.get("datetime")) for t in times),
        ],
    )
    if stamp:
        return stamp
    # Human-readable dates only: <time> text, then elements whose class says "date".
    texts = [_text(t) for t in times]
    texts += [
        _text(e)
        for e in r.doc.xpath(
            "//*[contains(@class, 'date') or contains(@class, 'datum') "
            "or contains(@class, 'dateline')][not(self::meta)]"
        )[:20]
    ]
    for text in texts:
        if text and (stamp := human_time(text, language, "text")):
            r.sources["published"] = "text"
            return stamp
    return None


def _modified(r: _Reader, article: dict, og: dict, mprops: dict) -> Timestamp | None:
    labelled = [
        t.get("datetime")
        for t in r.time_elements
        if re.search(r"modif|updat|aktualisiert", f"{t.get('class')} {t.get('itemprop')}", re.I)
    ]
    return _first_time(
        r,
        "modified",
        [
            ("jsonld:dateModified", article.get("dateModified")),
            ("meta:article:modified_time", og.get("article:modified_time")),
            ("meta:og:updated_time", og.get("og:updated_time")),
            ("microdata:dateModified", mprops.get("dateModified")),
            *(("time[datetime]", v) for v in labelled),
        ],
    )


def _fragment(value: Any) -> str | None:
    """An entry's id: "https://x.test/live#post-3" and "post-3" name the same entry."""
    if not isinstance(value, str) or not value.strip():
        return None
    return urldefrag(value.strip()).fragment or value.strip()


def _live_updates(blog: dict | None, pinned_ids: set[str], resolve: Any) -> Iterable[LiveUpdate]:
    for update in _as_list(blog.get("liveBlogUpdate") if blog else None):
        update = resolve(update)
        if not isinstance(update, dict):
            continue
        uid = _fragment(update.get("@id") or update.get("url") or update.get("identifier"))
        when = update.get("datePublished") or update.get("dateModified")
        text = " ".join(
            t for k in ("headline", "articleBody") if (t := _clean(_first(update.get(k))))
        )
        yield LiveUpdate(
            id=uid,
            time=machine_time(when, "jsonld") if when else None,
            text=text,
            pinned=uid in pinned_ids,
            source="jsonld",
        )


def _looks_live(doc: Any) -> bool:
    return bool(doc.xpath("//*[contains(@class, 'liveblog') or contains(@class, 'live-entry')][1]"))


def _live_entries(r: _Reader) -> Iterable[LiveUpdate]:
    found = r.doc.xpath(
        "//*[self::article or self::li or self::div or self::section]"
        "[@data-pinned or contains(@class, 'entry') or contains(@class, 'post')"
        " or contains(@class, 'update')][.//time or @data-pinned]"
    )
    chosen = set(found)
    # Innermost: a feed of entries contains entries, an entry's text block does not.
    for el in (e for e in found if not any(d in chosen for d in e.iterdescendants())):
        labels = [
            _text(x)
            for x in el.xpath(".//*[contains(@class, 'label') or contains(@class, 'badge')]")
        ]
        pinned = (
            el.get("data-pinned", "").lower() not in ("", "false", "0")
            or "pinned" in (el.get("class") or "").lower()
            or any(_PIN_LABEL.search(t) for t in labels)
        )
        time = _first(el.xpath(".//time[@datetime]"))
        yield LiveUpdate(
            id=_fragment(el.get("id") or el.get("data-entry-id")),
            time=machine_time(time.get("datetime"), "page") if time is not None else None,
            text=_text(el, skip_tags=("time",), skip_classes=("label", "badge")),
            pinned=pinned,
            source="page",
        )


def _corrections(r: _Reader, language: str | None) -> list[Correction]:
    lower = "translate(@{a}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"
    test = " or ".join(
        f"contains({lower.format(a=a)}, '{w}')" for a in ("class", "id") for w in _CORRECTION_WORDS
    )
    found = [e for e in r.doc.xpath(f"//*[{test}]") if e.tag not in _NOT_CONTENT]
    chosen = set(found)
    out = []
    # Innermost modules: a corrections list holds one per item, a box holds its note. The
    # time may sit beside the note, in an enclosing module.
    for el in (e for e in found if not any(d in chosen for d in e.iterdescendants())):
        text = _text(el, skip_tags=("time", "h1", "h2", "h3", "h4", "h5", "h6"))
        if not text:
            continue
        scopes = [el, *(a for a in el.iterancestors() if a in chosen)]
        time = next((t for s in scopes for t in s.xpath(".//time")[:1]), None)
        stamp = None
        if time is not None:
            stamp = machine_time(time.get("datetime"), "time[datetime]") or human_time(
                _text(time), language, "text"
            )
        out.append(Correction(text=text, time=stamp))
    return out


# -- what kind of page ---------------------------------------------------------------------
def _kind(
    r: _Reader,
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
    # Visible entries are read only where the page looks live (see _looks_live).
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


# -- story teasers -------------------------------------------------------------------------
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


def _listing(r: _Reader) -> list[Teaser]:
    """Story teasers under main (the whole page when there is none), in page order: a link in
    a heading (or holding one) is a headline; a nearby paragraph is its summary."""
    scope = r.main if r.main is not None else _first(r.doc.xpath("//body"))
    scope = r.doc if scope is None else scope
    links = scope.xpath(
        f".//a[@href][ancestor::*[{_HEADING}] or descendant::*[{_HEADING}]"
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
        heading = _first(a.xpath(f"ancestor::*[{_HEADING}][1]"))
        if heading is None:
            heading = _first(a.xpath(f"descendant::*[{_HEADING}][1]"))
        if heading is not None and a in heading.iterancestors():
            headline = _text(heading)  # the link holds the heading (and perhaps more)
        else:
            headline = _text(a) or (_text(heading) if heading is not None else "")
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
        text = _text(el)
        linked = _clean(" ".join(_text(x) for x in el.iter("a")))
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


# -- fact boxes ----------------------------------------------------------------------------
def _fact_text(text: str, *, label: bool) -> str:
    text = _clean(text.replace("\xa0", " "))
    return _FACT_TRAIL.sub("", text) if label else _FACT_LEAD.sub("", text)


def _title_text(el: Any) -> str:
    return _fact_text(_text(el).replace("\u2019", "'"), label=True)


def _dl_facts(dl: Any) -> list[Fact]:
    facts: list[Fact] = []
    label: str | None = None
    values: list[str] = []

    def close() -> None:
        if label and values:
            facts.append(Fact(label, ", ".join(values)))

    for el in dl.iter("dt", "dd"):
        if el.tag == "dt":
            close()
            label, values = _fact_text(_text(el), label=True), []
        elif label and (value := _fact_text(_text(el), label=False)):
            values.append(value)
    close()
    return facts


def _table_facts(table: Any) -> list[Fact]:
    facts = []
    for row in table.iter("tr"):
        cells = [c for c in row if isinstance(c.tag, str) and c.tag in ("th", "td")]
        if len(cells) < 2 or all(c.tag == "th" for c in cells):
            continue  # a header row, or a row that is not label + value
        label = _fact_text(_text(cells[0]), label=True)
        value = _fact_text(" ".join(_text(c) for c in cells[1:]), label=False)
        if label and value:
            facts.append(Fact(label, value))
    return facts


def _item_fact(item: Any) -> Fact | None:
    """ "<strong>Label:</strong> value", "<b>Label</b> value" or "Label: value"."""
    children = [c for c in item if isinstance(c.tag, str)]
    first = children[0] if children else None
    if first is not None and not (item.text or "").strip() and first.tag in _LABEL_TAGS:
        label = _fact_text(_text(first), label=True)
        rest = [first.tail or ""]
        for c in children[1:]:
            rest += [_text(c), c.tail or ""]
        value = _fact_text(" ".join(rest), label=False)
        if label and value and len(label) <= 60:
            return Fact(label, value)
    text = _clean(_text(item).replace("\xa0", " "))
    head, colon, tail = text.partition(":")
    if colon and head.strip() and len(head) <= 40 and len(head.split()) <= 5:
        value = _fact_text(tail, label=False)
        if value:
            return Fact(_fact_text(head, label=True), value)
    return None


def _facts_in(el: Any) -> list[Fact]:
    """Entries from the first definition list, table or list in `el` that has any; failing
    those, from its paragraphs ("<strong>Label</strong> value")."""
    for source in el.xpath(
        "descendant-or-self::*[self::dl or self::table or self::ul or self::ol]"
    )[:10]:
        if source.tag == "dl":
            facts = _dl_facts(source)
        elif source.tag == "table":
            facts = _table_facts(source)
        else:
            facts = [f for li in source if li.tag == "li" and (f := _item_fact(li))]
        if facts:
            return facts
    return [f for p in el.xpath("./p | ./div") if (f := _item_fact(p))]


def _box_title(box: Any) -> str | None:
    found = box.xpath(
        f"descendant-or-self::*[{_HEADING} or self::caption or self::figcaption or self::legend"
        " or self::summary][1]"
    )
    if not found:
        cls = " or ".join(
            f"contains({_LOWER.format('@class')}, '{w}')"
            for w in ("title", "titre", "titel", "heading", "kopf")
        )
        found = box.xpath(f"descendant::*[{cls}][not(self::dl or self::ul or self::ol)][1]")
    title = _title_text(found[0]) if found else _clean(box.get("aria-label") or "")
    return title or None


def _titled_list(heading: Any) -> Any:
    """What a "Key facts" heading or caption introduces: its table or figure, or the list that
    follows it (the heading's own next siblings, or its wrapper's), bare or in a wrapper."""
    if heading.tag in ("caption", "figcaption", "legend", "summary"):
        return heading.getparent()
    node = heading
    for _ in range(3):
        for sib in islice(node.itersiblings(), 3):
            if not isinstance(sib.tag, str):
                continue
            if sib.tag in _LIST_TAGS:
                return sib
            inner = next((c for c in sib if isinstance(c.tag, str)), None)
            if inner is not None and inner.tag in _LIST_TAGS:
                return sib  # <div class="..."><dl>...</dl></div>
        parent = node.getparent()
        if parent is None or parent.tag in ("main", "article", "body", "html"):
            return None
        node = parent
    return None


def _factbox(r: _Reader) -> tuple[str | None, tuple[Fact, ...]]:
    """The first fact box on the page (in main first): a box whose class or id says so, or a
    heading/caption that reads like "Key facts" over a list, table or definition list."""
    # One pass in document order (an XPath with translate() per attribute costs seconds on a
    # 10 MB page).
    candidates: list[tuple[Any, Any, int]] = []
    for el in r.doc.iter(*_BOX_TAGS, *_TITLE_TAGS):
        tag = el.tag
        if tag in _BOX_TAGS:
            words = f"{el.get('class') or ''} {el.get('id') or ''}".lower()
            if words.strip() and any(w in words for w in FACTBOX_CLASS_WORDS):
                candidates.append((el, None, 1))
                continue
        if tag in _BOX_TAGS and el.get("role") != "heading":
            continue
        text = "".join(t for t in el.itertext() if isinstance(t, str))
        title = _fact_text(text.replace("\u2019", "'"), label=True) if len(text) < 80 else ""
        if title and FACTBOX_TITLE.fullmatch(title):
            candidates.append((el, _titled_list(el), 2))
    main = r.main

    def outside_main(c: tuple[Any, Any, int]) -> bool:
        return main is None or not (c[0] is main or main in c[0].iterancestors())

    candidates.sort(key=outside_main)  # in main first; stable, so in document order
    for el, source, need in candidates[:200]:
        if any(a.tag in ("nav", "footer") for a in el.iterancestors()):
            continue
        if need == 1:
            facts = _facts_in(el)
            title = _box_title(el)
        else:
            facts = _facts_in(source) if source is not None else []
            title = _title_text(el)
        if len(facts) >= need:
            return title, tuple(facts[:50])
    return None, ()
