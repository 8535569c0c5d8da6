"""Fuzzing the feed reader: whatever bytes a site serves as a feed, sitemap or homepage,
`parse_document` returns a `ParsedFeed` (items, or `error` / `warning` saying what was wrong)
and never raises; the byte helpers (`feed_bytes`) return their documented pairs. Inputs are
arbitrary bytes and the real feed fixtures mutated (cut, bytes flipped, markup spliced in,
gzipped, re-declared)."""

from __future__ import annotations

import gzip
from datetime import datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from newsbench_dagster.core.web.feed_bytes import decode_text, gunzip, utf8_xml
from newsbench_dagster.core.web.feeds import FeedItem, ParsedFeed, parse_document, sniff_kind

FIXTURES = Path(__file__).parents[1] / "fixtures" / "feeds"
REAL = {p.name: p.read_bytes() for p in sorted(FIXTURES.iterdir()) if p.is_file()}
BASE = "http://harbor-herald.test/"
KINDS = [None, "rss", "atom", "jsonfeed", "sitemap", "sitemap_index", "homepage"]
KNOWN_KINDS = {k for k in KINDS if k}
SPLICES = [
    b"<",
    b">",
    b"&",
    b"&amp;",
    b"&#0;",
    b"&#x110000;",
    b"&nbsp;",
    b"<![CDATA[",
    b"]]>",
    b"<!--",
    b"-->",
    b'<?xml version="1.0" encoding="latin-1"?>',
    b'<?xml version="1.0" encoding="no-such-charset"?>',
    b"<!DOCTYPE html>",
    b"<html>",
    b"<item><title>x</title><link>javascript:alert(1)</link></item>",
    b"<entry><link href='//[::1'/></entry>",
    b"<url><loc>http://[bad</loc><lastmod>2026-02-30</lastmod></url>",
    b"<pubDate>Mon, 99 Foo 20261 25:61:61 +9999</pubDate>",
    b"<published>99999-12-31T23:59:59Z</published>",
    b"\x00",
    b"\xff\xfe",
    b"\xef\xbb\xbf",
    b"\xc3\x28",
    b'{"version": "https://jsonfeed.org/version/1.1", "items": [{"url": 5}]}',
    b'"items": null',
    b"[",
    b"}",
]
HEADERS = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {
            "content-type": st.sampled_from(
                [
                    "application/rss+xml; charset=utf-8",
                    "text/xml; charset=iso-8859-1",
                    "application/feed+json",
                    "text/html; charset=bogus",
                    "application/json",
                    "text/plain; charset=utf-16",
                    "",
                ]
            )
        }
    ),
)


@st.composite
def mutated_feeds(draw) -> bytes:
    data = bytearray(REAL[draw(st.sampled_from(sorted(REAL)))])
    if data[:2] == b"\x1f\x8b":
        data = bytearray(gzip.decompress(bytes(data)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["cut", "flip", "splice", "delete", "repeat"]))
        at = draw(st.integers(0, len(data)))
        if op == "cut":
            data = data[:at]
        elif op == "flip" and data:
            data[min(at, len(data) - 1)] = draw(st.integers(0, 255))
        elif op == "splice":
            data[at:at] = draw(st.sampled_from(SPLICES))
        elif op == "delete":
            data[at : at + draw(st.integers(1, 64))] = b""
        else:
            data[at:at] = data[at : at + draw(st.integers(1, 200))] * draw(st.integers(2, 20))
    if draw(st.booleans()):
        data = bytearray(gzip.compress(bytes(data)))
        if draw(st.booleans()):  # a gzip stream cut short
            data = data[: draw(st.integers(2, len(data)))]
    return bytes(data)


def check_parsed(parsed: ParsedFeed) -> None:
    assert isinstance(parsed, ParsedFeed)
    assert parsed.kind in KNOWN_KINDS
    assert parsed.error is None or isinstance(parsed.error, str)
    assert parsed.warning is None or isinstance(parsed.warning, str)
    for item in parsed.items:
        assert isinstance(item, FeedItem)
        assert item.title is None or isinstance(item.title, str)
        assert item.url is None or isinstance(item.url, str)
        if item.published is not None:
            assert isinstance(item.published, datetime) and item.published.tzinfo is not None
        item.as_json()


@given(content=st.binary(max_size=4096), kind=st.sampled_from(KINDS), headers=HEADERS)
def test_any_bytes_parse_to_a_parsed_feed(content, kind, headers):
    check_parsed(parse_document(content, BASE, kind, headers))
    assert sniff_kind(content, headers) in KNOWN_KINDS


@given(content=mutated_feeds(), kind=st.sampled_from(KINDS), headers=HEADERS)
def test_mutated_real_feeds_parse_to_a_parsed_feed(content, kind, headers):
    check_parsed(parse_document(content, BASE, kind, headers))


@given(content=st.binary(max_size=2048), headers=HEADERS)
def test_the_byte_helpers_return_their_pairs(content, headers):
    for data in (content, b"\x1f\x8b" + content, gzip.compress(content)[: len(content) + 10]):
        out, problem = gunzip(data)
        assert isinstance(out, bytes) and (problem is None or isinstance(problem, str))
        assert problem is None or out == b""
    text, note = decode_text(content, headers)
    assert isinstance(text, str) and (note is None or isinstance(note, str))
    xml, note = utf8_xml(content, headers)
    assert isinstance(xml, bytes) and (note is None or isinstance(note, str))
