"""The producer reads every feed format publishers really serve: RSS 0.91/1.0/2.0, Atom,
JSON Feed, news/video/image sitemaps and indexes, gzip, broken charsets and broken files.
Every bad document yields an error or a warning, never an exception."""

from __future__ import annotations

import gzip
import json
import random
import zlib
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from newsbench_dagster.cli import app
from newsbench_dagster.core.web.feed_bytes import MAX_DECOMPRESSED_BYTES, MAX_DOCUMENT_BYTES
from newsbench_dagster.core.web.feeds import parse_document, sniff_kind
from tests.support.paths import FIXTURES as TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "feeds"


def _read(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def _utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


# fixture, the URL it was fetched from, kind, item count, first title, first url, first time
GOOD = [
    (
        "rss091.xml",
        "https://www.valley-courier.test/rss/front.xml",
        "rss",
        3,
        "Flood barriers go up along the lower river",
        "https://www.valley-courier.test/news/flood-barriers-lower-river.html",
        None,
    ),
    (
        "rss10_rdf.xml",
        "https://www.nordkurier-beispiel.test/rss",
        "rss",
        4,
        "Landtag beschließt Doppelhaushalt nach langer Debatte",
        "https://www.nordkurier-beispiel.test/politik/landtag-haushalt-123.html",
        _utc(2026, 11, 30, 17, 45),
    ),
    (
        # CDATA title with <b>, a root-relative link resolved against the feed URL.
        "rss20_media.xml",
        "https://www.harbour-herald.test/world/rss.xml",
        "rss",
        5,
        "Live: Ceasefire talks resume in Geneva",
        "https://www.harbour-herald.test/world/2026/dec/01/ceasefire-talks-geneva-live",
        _utc(2026, 12, 1, 9, 30),
    ),
    (
        # xml:base, a relative link, published preferred over updated, a title with &lt;em&gt;.
        "atom_xmlbase.xml",
        "https://www.le-quotidien-exemple.test/actualites/flux.atom",
        "atom",
        3,
        "Budget : l\u2019Assembl\u00e9e adopte la premi\u00e8re partie",
        "https://www.le-quotidien-exemple.test/actualites/politique/budget-premiere-partie-20261201",
        _utc(2026, 12, 1, 7, 0),
    ),
    (
        "jsonfeed_11.json",
        "https://cedar-ledger.test/feed.json",
        "jsonfeed",
        4,
        "Cedar Street bridge reopens after two-year rebuild",
        "https://cedar-ledger.test/2026/12/01/bridge-reopens",
        _utc(2026, 12, 1, 12, 30),
    ),
    (
        "jsonfeed_10.json",
        "https://pinewood-weekly.test/feed.json",
        "jsonfeed",
        2,
        "Library extends opening hours for exam season",
        "https://pinewood-weekly.test/news/library-extends-opening-hours",
        _utc(2026, 11, 28, 9, 0),
    ),
    (
        "sitemap_news.xml",
        "https://www.diario-ejemplo.test/sitemap-news.xml",
        "sitemap",
        4,
        "El Congreso aprueba la ley de vivienda con el apoyo de sus socios",
        "https://www.diario-ejemplo.test/espana/2026-12-01/congreso-aprueba-ley-vivienda.html",
        _utc(2026, 12, 1, 8, 15),
    ),
    (
        "sitemap_news.xml.gz",
        "https://www.diario-ejemplo.test/sitemap-news.xml.gz",
        "sitemap",
        4,
        "El Congreso aprueba la ley de vivienda con el apoyo de sus socios",
        "https://www.diario-ejemplo.test/espana/2026-12-01/congreso-aprueba-ley-vivienda.html",
        _utc(2026, 12, 1, 8, 15),
    ),
    (
        "sitemap_video.xml",
        "https://tv.river-city-news.test/sitemap-video.xml",
        "sitemap",
        2,
        "Explained: what the council budget means for you",
        "https://tv.river-city-news.test/video/2026/12/01/council-budget-explainer",
        _utc(2026, 12, 1, 12, 0),
    ),
    (
        "sitemap_image.xml",
        "https://www.coastline-gazette.test/sitemap-images.xml",
        "sitemap",
        3,
        "Winter swimmers brave the North Beach",
        "https://www.coastline-gazette.test/photos/2026/11/winter-swimmers",
        _utc(2026, 11, 29, 14, 0),
    ),
    (
        "sitemap_index.xml",
        "https://www.metro-daily.test/sitemap.xml",
        "sitemap_index",
        3,
        None,
        "https://www.metro-daily.test/sitemaps/news.xml",
        _utc(2026, 12, 1, 10, 0),
    ),
]


@pytest.mark.parametrize("name,base,kind,count,title,url,published", GOOD, ids=[g[0] for g in GOOD])
def test_each_format_parses_exactly(name, base, kind, count, title, url, published):
    parsed = parse_document(_read(name), base)
    assert parsed.error is None and parsed.warning is None
    assert parsed.kind == kind
    assert len(parsed.items) == count
    first = parsed.items[0]
    assert (first.title, first.url, first.published) == (title, url, published)
    assert all(i.published is None or i.published.tzinfo is UTC for i in parsed.items)


def test_rss20_titles_are_plain_text_and_links_resolved():
    items = parse_document(
        _read("rss20_media.xml"), "https://www.harbour-herald.test/world/rss.xml"
    ).items
    # Double-escaped "&amp;amp;", escaped <i> markup, a multi-line CDATA; media:title ignored.
    assert [i.title for i in items[1:4]] == [
        "Markets slip as energy prices & rates weigh",
        "Analysis: why the port strike matters",
        "Record turnout in island elections",
    ]
    assert (
        items[2].url
        == "https://www.harbour-herald.test/world/world/2026/nov/30/port-strike-analysis"
    )
    assert items[3].published == _utc(2026, 12, 1, 0, 45)  # EST
    assert items[4].title == "Storm Imogen: ferries cancelled for a second day"
    assert {i.language for i in items} == {"en-gb"}


def test_atom_xml_base_and_updated_fallback():
    parsed = parse_document(_read("atom_xmlbase.xml"), "https://elsewhere.test/feed")
    second, third = parsed.items[1], parsed.items[2]
    # An entry's own xml:base wins; only <updated> there, so it is the time.
    assert second.url == "https://www.le-quotidien-exemple.test/sport/rugby-liste-xv-20261130"
    assert second.published == _utc(2026, 11, 30, 19, 30)
    assert third.title == "M\u00e9t\u00e9o : vigilance orange dans le Sud-Est"
    assert third.url == "https://www.le-quotidien-exemple.test/meteo/vigilance-orange-sud-est"
    assert third.published == _utc(2026, 11, 30, 5, 45)  # published, not updated
    assert parsed.language == "fr"


def test_jsonfeed_fields():
    parsed = parse_document(_read("jsonfeed_11.json"), "https://cedar-ledger.test/feed.json")
    wire, spanish, note = parsed.items[1:]
    assert wire.url == "https://wire.example-agency.test/stories/ab12cd"  # external_url
    assert wire.published == _utc(2026, 11, 30, 23, 10)  # date_modified
    assert (spanish.language, wire.language, parsed.language) == ("es", "en-US", "en-US")
    assert note.title is None and note.url.endswith("/notes/2026/11/30/1840")
    older = parse_document(_read("jsonfeed_10.json"), "https://pinewood-weekly.test/feed.json")
    assert older.items[1].title == "Farmers\u2019 market moves indoors for winter"


def test_jsonfeed_sniffed_by_header_and_over_a_configured_kind():
    body = _read("jsonfeed_11.json")
    assert sniff_kind(body) == "jsonfeed"
    assert sniff_kind(b"  ", {"content-type": "application/feed+json"}) == "jsonfeed"
    assert parse_document(body, "https://cedar-ledger.test/feed.json", "rss").kind == "jsonfeed"
    headers = {"content-type": "application/json; charset=utf-8"}
    assert len(parse_document(body, "https://x.test/f", None, headers).items) == 4


def test_jsonfeed_bad_documents():
    base = "https://cedar-ledger.test/feed.json"
    assert "not a JSON Feed" in parse_document(b'{"hello": 1}', base).error
    assert "not valid JSON" in parse_document(b'{"version": ', base).error
    # Cut mid-item: the complete items are kept, with a warning.
    body = _read("jsonfeed_11.json")
    cut = body[: body.index(b'"ledger-20261130-41"')]
    parsed = parse_document(cut, base)
    assert len(parsed.items) == 2 and "not valid JSON" in parsed.warning
    deep = parse_document(b'{"items": ' + b"[" * 100_000, base)
    assert deep.error and "JSON" in deep.error
    unversioned = parse_document(b'{"items": [{"url": "https://a.test/1", "title": "t"}]}', base)
    assert len(unversioned.items) == 1 and "version" in unversioned.warning


def test_sitemap_titles_fall_back_sensibly():
    base = "https://www.coastline-gazette.test/sitemap-images.xml"
    images = parse_document(_read("sitemap_image.xml"), base).items
    # A caption only when there is no title; nothing at all leaves the title empty.
    assert images[1].title == "The restored lighthouse lit for the first time"
    assert images[2].title is None
    assert images[2].url == "https://www.coastline-gazette.test/photos/2026/11/harbour-at-dusk"
    video = parse_document(_read("sitemap_video.xml"), base).items
    assert video[1].published == _utc(2026, 12, 1, 5, 59)  # lastmod without publication_date
    news = parse_document(_read("sitemap_news.xml"), base)
    assert news.items[1].title == "El Ibex abre en rojo & pierde los 12.000 puntos"
    assert news.language == "es" and {i.role for i in news.items} == {"story"}


def test_sitemap_index_lists_children_to_follow():
    base = "https://www.metro-daily.test/sitemap.xml"
    parsed = parse_document(_read("sitemap_index.xml"), base, "sitemap")
    assert parsed.kind == "sitemap_index"
    assert {i.role for i in parsed.items} == {"sitemap"}
    assert parsed.items[2].url == "https://www.metro-daily.test/sitemaps/video.xml"


def test_charset_declared_utf8_but_windows_1252():
    parsed = parse_document(_read("latin1_declared_utf8.xml"), "https://petit-regional.test/rss")
    assert len(parsed.items) == 3 and parsed.error is None
    assert [i.title for i in parsed.items] == [
        "F\u00eate de l\u2019hiver : le march\u00e9 de No\u00ebl ouvre \u00e0 Besan\u00e7on",
        "Cr\u00e8ches : \u00ab une p\u00e9nurie de places \u00bb selon les \u00e9lus",
        "Prix du gazole : 1,85 \u20ac le litre \u00e0 la pompe",
    ]
    assert parsed.warning == "declared UTF-8 but the bytes are not UTF-8: decoded as cp1252"


def test_charset_missing():
    parsed = parse_document(_read("no_charset.xml"), "https://wiener-beispielblatt.test/rss")
    assert [i.title for i in parsed.items] == [
        "Gr\u00fcne fordern mehr Stra\u00dfenbahnen f\u00fcr D\u00f6bling",
        "Gr\u00f6\u00dfter Adventmarkt \u00f6ffnet am Rathausplatz",
    ]
    assert "no charset declared" in parsed.warning and "cp1252" in parsed.warning
    # The same feed in UTF-8 needs no declaration and earns no warning.
    text = _read("no_charset.xml").decode("latin-1")
    clean = parse_document(text.encode("utf-8"), "https://wiener-beispielblatt.test/rss")
    assert clean.warning is None and clean.items[1].title == parsed.items[1].title
    # An HTTP charset outranks the document's declaration.
    latin = _read("latin1_declared_utf8.xml")
    headers = {"content-type": "application/rss+xml; charset=windows-1252"}
    via_header = parse_document(latin, "https://petit-regional.test/rss", None, headers)
    assert via_header.warning is None and via_header.items[0].title.startswith("F\u00eate")
    # UTF-8 bytes labelled latin-1 (which never fails to decode) are read as UTF-8.
    decl = b'<?xml version="1.0" encoding="ISO-8859-1"?>'
    labelled = decl + text.encode("utf-8")
    mislabelled = parse_document(labelled, "https://wiener-beispielblatt.test/rss")
    assert mislabelled.items[1].title == parsed.items[1].title
    assert "declared ISO-8859-1 but the bytes are UTF-8" in mislabelled.warning
    # A UTF-8 BOM is not part of the text.
    bom = parse_document(b"\xef\xbb\xbf" + text.encode("utf-8"), "https://w.test/rss")
    assert bom.warning is None and len(bom.items) == 2


def test_truncated_documents_are_salvaged_with_a_warning():
    parsed = parse_document(_read("truncated.xml"), "https://lakeside-post.test/rss")
    assert [i.title for i in parsed.items] == [
        "Ice fishing season opens early",
        "Town hall approves snow plough contract",
    ]
    assert parsed.error is None and "not a valid feed" in parsed.warning
    sitemap = _read("sitemap_news.xml")
    cut = sitemap[: sitemap.index(b"Empate sin goles")]
    parsed = parse_document(cut, "https://www.diario-ejemplo.test/sitemap-news.xml")
    assert len(parsed.items) == 3 and "malformed XML" in parsed.warning
    assert parsed.items[0].title.startswith("El Congreso")


@pytest.mark.parametrize(
    "content,kind,error",
    [
        (_read("empty.xml"), None, "empty document"),
        (b"  \n\t ", "rss", "empty document"),
        (_read("error_page_served_as_feed.xml"), "rss", "not a feed: an HTML page"),
        (_read("error_page_served_as_feed.xml"), "sitemap", "not a feed: an HTML page"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64), None, "not a feed: a PNG image"),
        (b"Service unavailable, try later.\n", None, "not a valid feed"),
        (b"<html><body>gone</body></html>", "atom", "not a feed: an HTML page"),
        (b"<?xml version='1.0'?><note><to>x</to></note>", "sitemap", "not a sitemap"),
    ],
    ids=["empty", "blank", "html-rss", "html-sitemap", "png", "text", "html-atom", "xml"],
)
def test_not_a_feed(content, kind, error):
    parsed = parse_document(content, "https://x.test/feed", kind)
    assert parsed.items == [] and parsed.error and error in parsed.error


def test_oversized_document_is_refused_unparsed():
    big = b"<rss><channel>" + b" " * MAX_DOCUMENT_BYTES + b"</channel></rss>"
    parsed = parse_document(big, "https://x.test/feed")
    assert parsed.items == [] and "over the 50 MB limit" in parsed.error


def test_gzip_bomb_and_truncated_gzip():
    packer = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb = packer.compress(b"<urlset>" + bytes(MAX_DECOMPRESSED_BYTES)) + packer.flush()
    assert len(bomb) < MAX_DOCUMENT_BYTES
    parsed = parse_document(bomb, "https://x.test/sitemap.xml.gz")
    assert parsed.error == "decompressed size exceeds 50 MB (gzip bomb?)"
    gz = gzip.compress(_read("sitemap_index.xml"))
    parsed = parse_document(gz[: len(gz) // 2], "https://x.test/sitemap.xml.gz")
    assert parsed.items == [] and parsed.error.startswith("truncated gzip")
    parsed = parse_document(b"\x1f\x8bnot really gzip", "https://x.test/sitemap.xml.gz")
    assert "gzip" in parsed.error


def test_replacement_characters_are_reported():
    body = _read("no_charset.xml").decode("latin-1").replace("Grüne", "Gr\ufffdne")
    parsed = parse_document(body.encode("utf-8"), "https://w.test/rss")
    assert len(parsed.items) == 2 and "U+FFFD" in parsed.warning


def test_never_raises_on_cut_or_corrupted_bytes():
    # Real transfers get cut anywhere and proxies mangle bytes: every outcome is a ParsedFeed.
    rng = random.Random(7)
    for path in sorted(FIXTURES.iterdir()):
        body = path.read_bytes()
        for _ in range(12):
            cut = body[: rng.randrange(len(body) + 1)]
            flipped = bytearray(body)
            for _ in range(4):
                if flipped:
                    flipped[rng.randrange(len(flipped))] = rng.randrange(256)
            for content in (cut, bytes(flipped)):
                for kind in (None, "rss", "sitemap"):
                    parsed = parse_document(content, "https://x.test/feed", kind)
                    # A homepage may list nothing; anything else says what it found or why not.
                    assert parsed.error or parsed.items or parsed.kind == "homepage", path.name


def _inspect(*args: str):
    result = CliRunner().invoke(app, ["feeds", "inspect", *args, "--json"])
    return result, [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize(
    "name,exit_code,count",
    [
        ("rss20_media.xml", 0, 5),
        ("jsonfeed_11.json", 0, 4),
        ("sitemap_news.xml.gz", 0, 4),
        ("sitemap_index.xml", 0, 3),
        ("latin1_declared_utf8.xml", 2, 3),  # repaired charset: a warning, items printed
        ("truncated.xml", 2, 2),
        ("empty.xml", 1, 0),
    ],
)
def test_cli_inspect(name, exit_code, count):
    result, items = _inspect(str(FIXTURES / name))
    assert result.exit_code == exit_code, result.output
    assert len(items) == count
    if exit_code:
        assert name in result.stderr


def test_cli_inspect_details():
    _, items = _inspect(str(FIXTURES / "sitemap_index.xml"))
    assert {i["role"] for i in items} == {"sitemap"}
    _, items = _inspect(str(FIXTURES / "latin1_declared_utf8.xml"))
    assert items[0]["title"].startswith("F\u00eate de l\u2019hiver")
    result, items = _inspect(str(FIXTURES / "error_page_served_as_feed.xml"), "--kind", "rss")
    assert result.exit_code == 1 and not items and "HTML page" in result.stderr
