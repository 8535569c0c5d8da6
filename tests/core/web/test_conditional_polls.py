"""Polling politely and cheaply: conditional requests (a poll that finds nothing new costs a
304 and no body), the size cap on what a poll reads, and robots.txt's Crawl-delay, against a
real newsroom (frozen clock) and a real loopback server."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.tasks.poll import poll_site
from newsbench_dagster.core.web import network
from newsbench_dagster.core.web.network import Fetcher, Routing
from newsbench_dagster.core.web.sites import load_sites
from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom
from newsbench_dagster.paths import SITES_FILE

AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def frozen():
    clock = FixedClock(AT)
    with NewsroomServer(Newsroom(seed=7), clock=clock) as server:
        yield server, clock


def _poll(server, store, validators, site="harbor"):
    registry = load_sites(SITES_FILE)
    with Fetcher(Routing.via_proxy(server.address), registry.allowed_origins) as fetcher:
        fetcher.robots(registry.get(site).allowed_origins[0])  # robots first, not counted
        before = len(fetcher.records)
        rows = poll_site(registry.get(site), fetcher, store, AT.date(), validators)
        records = fetcher.records[before:]
    return rows, records


def _items(rows):
    return [(r.source_url, r.item_url, r.title) for r in rows if r.item_url]


def test_an_unchanged_site_costs_304s_and_gives_the_same_items(frozen, tmp_path):
    server, clock = frozen
    store, validators = LocalArtifactStore(tmp_path), {}
    first, first_records = _poll(server, store, validators)
    assert {r.fetch_status for r in first} == {"200"}
    assert set(validators) == {r.source_url for r in first}
    assert all(v["etag"] and v["raw_uri"] for v in validators.values())

    again, records = _poll(server, store, validators)
    assert {r.fetch_status for r in again} == {"304"}
    assert _items(again) == _items(first)
    assert sum(r.bytes for r in records) == 0 < sum(r.bytes for r in first_records)

    # Time passes: new stories, a new lead. The changed sources are read whole again.
    clock.advance(timedelta(hours=3))
    later, _ = _poll(server, store, validators)
    assert "200" in {r.fetch_status for r in later}
    assert _items(later) != _items(first)


def test_a_poll_without_validators_is_unconditional(frozen, tmp_path):
    server, _ = frozen
    store = LocalArtifactStore(tmp_path)
    _poll(server, store, {})
    rows, _ = _poll(server, store, None)
    assert {r.fetch_status for r in rows} == {"200"}


def test_a_lost_kept_copy_is_read_whole_again(frozen, tmp_path):
    server, _ = frozen
    store, validators = LocalArtifactStore(tmp_path), {}
    first, _ = _poll(server, store, validators)
    for v in validators.values():
        v["raw_uri"] = (tmp_path / "gone.raw").as_uri()
    rows, _ = _poll(server, store, validators)
    assert {r.fetch_status for r in rows} == {"200"}
    assert _items(rows) == _items(first)


class _Huge(BaseHTTPRequestHandler):
    feed_requests: list[float] = []  # when each /feed.xml request arrived (monotonic)

    def do_GET(self):  # noqa: N802 - http.server's naming
        if self.path == "/feed.xml":
            self.feed_requests.append(time.monotonic())
        if self.path in ("/moved", "/away", "/private-feed"):
            target = {
                "/moved": "/feeds/rss.xml",
                "/away": "http://elsewhere.invalid/feed.xml",
                "/private-feed": "/private/feed.xml",
            }[self.path]
            self.send_response(301)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path == "/feeds/rss.xml":
            body = (
                b'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>'
                b"<item><title>Moved feed</title><link>../story/1</link></item></channel></rss>"
            )
            self.send_response(200)
            self.send_header("Content-Type", "application/rss+xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path == "/robots.txt":
            body = b"User-agent: *\nDisallow: /private/\nCrawl-delay: 0.4\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/rss+xml")
        self.end_headers()
        chunk = b"<item><title>x</title></item>" * 1000
        try:
            for _ in range(200):  # ~6 MB, streamed without a length
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def huge_server():
    _Huge.feed_requests.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Huge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_document_over_the_cap_is_refused_unread(huge_server, monkeypatch):
    monkeypatch.setattr(network, "MAX_RESPONSE_BYTES", 1024 * 1024)
    with Fetcher(Routing(), {huge_server}) as fetcher:
        res = fetcher.fetch(huge_server + "/feed.xml")
    assert res.error and "larger than 1048576 bytes" in res.error
    assert res.content == b""


def test_the_fetcher_honours_crawl_delay(huge_server, monkeypatch):
    monkeypatch.setattr(network, "MAX_RESPONSE_BYTES", 1024)
    with Fetcher(Routing(), {huge_server}) as fetcher:
        for _ in range(3):
            fetcher.fetch(huge_server + "/feed.xml")
    # Crawl-delay spaces the requests' starts, so it is measured where they arrive (the ends
    # of the fetches also vary with how long each download took).
    stamps = _Huge.feed_requests
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    assert len(stamps) == 3 and min(gaps) >= 0.38, gaps


def test_a_feed_that_redirects_is_followed_on_the_allowlist_only(huge_server):
    from newsbench_dagster.core.web.feeds import parse_document

    with Fetcher(Routing(), {huge_server}) as fetcher:
        moved = fetcher.fetch(huge_server + "/moved")
        away = fetcher.fetch(huge_server + "/away")
        private = fetcher.fetch(huge_server + "/private-feed")
    assert moved.ok and moved.final_url == huge_server + "/feeds/rss.xml"
    # Relative links resolve against where the feed now lives, not where it was asked for.
    [item] = parse_document(moved.content, moved.final_url).items
    assert item.url == huge_server + "/story/1"
    assert away.error and "redirected off the allowlist" in away.error
    assert private.error and "disallowed by robots.txt" in private.error
