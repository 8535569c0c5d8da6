"""The newsroom over real HTTP: proxy and Host-header routing, pages vs ground truth, faults."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

import feedparser
import httpx
import pytest
from dateutil.parser import isoparse
from lxml import etree, html
from protego import Protego

from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom

AT = datetime(2026, 3, 10, 14, 7, tzinfo=UTC)
# Lead heading level per template family before any redesign (AT is before every drift).
LEAD_HEADING = {"classic": "h1", "grid": "h2", "magazine": "h1"}


@pytest.fixture(scope="module")
def newsroom() -> Newsroom:
    return Newsroom(seed=7)


@pytest.fixture(scope="module")
def clock() -> FixedClock:
    return FixedClock(AT)


@pytest.fixture(scope="module")
def server(newsroom: Newsroom, clock: FixedClock) -> Iterator[NewsroomServer]:
    with NewsroomServer(newsroom, clock=clock) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _reset(server: NewsroomServer, clock: FixedClock) -> Iterator[None]:
    yield
    server.faults.clear()
    clock.set(AT)


@pytest.fixture()
def client(server: NewsroomServer) -> Iterator[httpx.Client]:
    with httpx.Client(proxy=server.address, timeout=5) as c:
        yield c


def get_html(client: httpx.Client, url: str) -> html.HtmlElement:
    response = client.get(url)
    assert response.status_code == 200, url
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    return html.fromstring(response.content)


def meta(doc: html.HtmlElement, attr: str, value: str) -> str:
    (content,) = doc.xpath(f"//meta[@{attr}='{value}']/@content")
    return content


def test_homepages_match_ground_truth(
    server: NewsroomServer, newsroom: Newsroom, client: httpx.Client
) -> None:
    for spec in newsroom.sites:
        front = newsroom.site(spec.key).front_page(AT)
        doc = get_html(client, f"{spec.origin}/")
        assert doc.get("lang") == spec.language
        assert doc.xpath("//link[@rel='canonical']/@href") == [f"{spec.origin}/"]
        assert meta(doc, "property", "og:title") == spec.name
        assert meta(doc, "property", "og:type") == "website"
        # The front page's ItemList names the lead first, whatever the markup.
        (raw,) = doc.xpath("//script[@type='application/ld+json']/text()")
        items = json.loads(raw)["itemListElement"]
        assert items[0]["url"] == front.lead.url and items[0]["name"] == front.lead.headline
        assert [i["url"] for i in items[1:]] == [s.url for s in front.others]
        assert len(doc.xpath("//nav//a")) >= len(spec.sections)

        (main,) = doc.xpath("//main")
        articles = main.xpath(".//article")
        assert len(articles) == 9
        (heading,) = articles[0].xpath(f".//{LEAD_HEADING[spec.template]}")
        (link,) = heading.xpath(".//a")
        assert link.text == front.lead.headline
        assert link.get("href") == front.lead.path
        assert front.lead.summary in articles[0].text_content()
        others = [a.xpath(".//h2/a | .//h3/a")[0].text for a in articles[1:]]
        assert others == [s.headline for s in front.others]

        (aside,) = doc.xpath("//aside")
        assert not aside.xpath("ancestor::main") and not main.xpath(".//aside")
        # "Most read" is a lazy section: a spinner until the script fetches its fragment.
        (lazy,) = aside.xpath(".//*[@data-lazy]")
        assert lazy.xpath(".//*[@role='status']")
        fragment = html.fromstring(client.get(f"{spec.origin}{lazy.get('data-src')}").text)
        assert [a.text for a in fragment.xpath("//a")] == [s.headline for s in front.most_read]
        assert doc.xpath("//footer//a[@href='/private/archive']")


def test_lead_rotates_with_the_clock(
    server: NewsroomServer, newsroom: Newsroom, clock: FixedClock, client: httpx.Client
) -> None:
    site = newsroom.site("harbor")
    leads, not_newest = set(), 0
    for step in range(12):
        at = AT + timedelta(minutes=20 * step)
        clock.set(at)
        doc = get_html(client, "http://harbor-herald.test/")
        shown = doc.xpath("//main//article[1]//h1/a")[0].text
        front = site.front_page(at)
        assert shown == front.lead.headline
        leads.add(shown)
        not_newest += front.lead.k != site.latest_k(at)
    assert len(leads) >= 4
    assert not_newest >= 1


def test_article_metadata(server: NewsroomServer, newsroom: Newsroom, client: httpx.Client) -> None:
    for spec in newsroom.sites:
        site = newsroom.site(spec.key)
        tz = spec.tz
        # One story with two authors and a visible update, one plain, per site.
        recent = [s for s in site.stories(AT, 80) if s.quirk is None]
        picks = [
            next(s for s in recent if len(s.authors) == 2),
            next(s for s in recent if s.updated_at and s.updated_at <= AT),
            next(s for s in recent if s.updated_at is None),
        ]
        for story in picks:
            # Cookie-less, like a crawler: no session, so no free article from the meter.
            response = httpx.get(story.url, proxy=server.address)
            assert response.status_code == 200
            modified = story.modified_at(AT)
            assert parsedate_to_datetime(response.headers["last-modified"]) == modified
            doc = html.fromstring(response.content)
            assert doc.xpath("//h1")[0].text_content() == story.headline
            assert meta(doc, "property", "og:title") == story.headline
            assert meta(doc, "property", "og:type") == "article"
            assert meta(doc, "property", "og:url") == story.url
            assert meta(doc, "property", "og:site_name") == spec.name
            assert meta(doc, "property", "og:description") == story.summary
            assert meta(doc, "name", "description") == story.summary
            assert meta(doc, "name", "author") == ", ".join(story.authors)
            published = meta(doc, "property", "article:published_time")
            assert isoparse(published) == story.published
            assert isoparse(published).utcoffset() == story.published.astimezone(tz).utcoffset()
            assert isoparse(meta(doc, "property", "article:modified_time")) == modified

            (raw,) = doc.xpath("//script[@type='application/ld+json']/text()")
            ld = json.loads(raw)
            assert ld["@type"] == "NewsArticle" and ld["headline"] == story.headline
            assert ld["author"] == [{"@type": "Person", "name": n} for n in story.authors]
            assert isoparse(ld["datePublished"]) == story.published
            assert isoparse(ld["dateModified"]) == modified
            assert ld["publisher"]["name"] == spec.name
            assert ld["inLanguage"] == spec.language

            times = [isoparse(t) for t in doc.xpath("//main//time/@datetime")]
            assert times == (
                [story.published, modified] if modified > story.published else [story.published]
            )
            joined = {"en": " and ", "de": " und ", "fr": " et "}[spec.language]
            names = joined.join(story.authors)
            byline = {
                "classic": "//p[@class='byline']",
                "grid": "//div[@class='autor']",
                "magazine": "//span[@class='signature']",
            }[spec.template]
            prefix = {"en": "By", "de": "Von", "fr": "Par"}[spec.language]
            assert doc.xpath(byline)[0].text_content() == f"{prefix} {names}"
            shown = story.body[:2] if story.paywalled else story.body
            for paragraph in shown:
                assert paragraph in doc.text_content()
            assert bool(doc.xpath("//*[@id='paywall']")) == story.paywalled


def test_pages_are_byte_identical_and_routing_modes_agree(
    server: NewsroomServer, newsroom: Newsroom, client: httpx.Client
) -> None:
    story = newsroom.site("rhein").stories(AT, 3)[2]
    twin = NewsroomServer(Newsroom(seed=7), clock=FixedClock(AT))
    with twin, httpx.Client(proxy=twin.address) as twin_client:
        for url in ["http://rheinblatt.test/", story.url, "http://rheinblatt.test/atom.xml"]:
            assert client.get(url).content == twin_client.get(url).content
    # Origin-form with a Host header gives the same page as the proxy form.
    direct = httpx.get(f"{server.address}/", headers={"Host": "rheinblatt.test"})
    assert direct.content == client.get("http://rheinblatt.test/").content


def test_feeds_match_ground_truth(
    server: NewsroomServer, newsroom: Newsroom, client: httpx.Client
) -> None:
    for spec in newsroom.sites:
        site = newsroom.site(spec.key)
        response = client.get(spec.origin + spec.feed_path)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith(f"application/{spec.feed_kind}+xml")
        feed = feedparser.parse(response.content)
        assert not feed.bozo, feed.get("bozo_exception")
        assert feed.version == {"rss": "rss20", "atom": "atom10"}[spec.feed_kind]
        expected = site.stories(AT, 20)
        assert [e.title for e in feed.entries] == [s.headline for s in expected]
        assert [e.link for e in feed.entries] == [s.url for s in expected]
        for entry, story in zip(feed.entries, expected, strict=True):
            assert datetime(*entry.published_parsed[:6], tzinfo=UTC) == story.published
            assert [a.name for a in entry.get("authors", [])] == story.authors
        if spec.feed_kind == "atom":
            root = etree.fromstring(response.content)
            assert root.get("{http://www.w3.org/XML/1998/namespace}lang") == spec.language
        else:
            assert feed.feed.language == spec.language


def test_news_sitemap(server: NewsroomServer, newsroom: Newsroom, client: httpx.Client) -> None:
    ns = {
        "s": "http://www.sitemaps.org/schemas/sitemap/0.9",
        "news": "http://www.google.com/schemas/sitemap-news/0.9",
    }
    for spec in newsroom.sites:
        site = newsroom.site(spec.key)
        response = client.get(f"{spec.origin}/sitemap-news.xml")
        root = etree.fromstring(response.content)
        expected = site.stories_since(AT - timedelta(hours=48), AT)
        assert len(expected) >= 48 * 60 // spec.story_interval_minutes - 1
        assert root.xpath("//s:url/s:loc/text()", namespaces=ns) == [s.url for s in expected]
        titles = root.xpath("//news:news/news:title/text()", namespaces=ns)
        assert titles == [s.headline for s in expected]
        dates = root.xpath("//news:publication_date/text()", namespaces=ns)
        assert [isoparse(d) for d in dates] == [s.published for s in expected]
        assert set(root.xpath("//news:publication/news:name/text()", namespaces=ns)) == {spec.name}
        assert set(root.xpath("//news:language/text()", namespaces=ns)) == {spec.language}


def test_robots_and_private(server: NewsroomServer, client: httpx.Client) -> None:
    response = client.get("http://lac-matin.test/robots.txt")
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    robots = Protego.parse(response.text)
    assert not robots.can_fetch("http://lac-matin.test/private/archive", "agent")
    assert not robots.can_fetch("http://lac-matin.test/api/fulltext/1", "agent")
    assert robots.can_fetch("http://lac-matin.test/search?q=x", "agent")
    assert robots.crawl_delay("agent") == 0.2
    assert robots.can_fetch("http://lac-matin.test/", "agent")
    assert list(robots.sitemaps) == ["http://lac-matin.test/sitemap-news.xml"]
    # The forbidden page exists: only robots.txt keeps a polite agent away.
    assert client.get("http://lac-matin.test/private/archive").status_code == 200


def test_not_found_future_and_unknown_host(
    server: NewsroomServer, newsroom: Newsroom, client: httpx.Client
) -> None:
    site = newsroom.site("harbor")
    future = site.story(site.latest_k(AT) + 1)
    response = client.get(future.url)
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")
    assert future.headline not in response.text
    assert client.get("http://harbor-herald.test/no/such/page").status_code == 404
    # Nothing of the control plane leaks onto site hosts.
    assert client.get("http://harbor-herald.test/__newsroom/health").status_code == 404

    response = client.get("http://x.example/")
    assert response.status_code == 502
    assert response.text.strip() == "newsroom: unknown host x.example"


def test_methods_and_headers(server: NewsroomServer, client: httpx.Client) -> None:
    get = client.get("http://harbor-herald.test/")
    head = client.head("http://harbor-herald.test/")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == str(len(get.content))
    assert get.headers["cache-control"] == "no-cache"
    assert parsedate_to_datetime(get.headers["date"]) == AT
    assert client.post("http://harbor-herald.test/", content=b"x").status_code == 405

    # A browser asking for a TLS tunnel is refused.
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"CONNECT harbor-herald.test:443 HTTP/1.1\r\nHost: harbor-herald.test\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 405")


def test_faults(server: NewsroomServer, client: httpx.Client) -> None:
    server.faults.set("harbor", "down")
    with pytest.raises(httpx.TransportError):
        client.get("http://harbor-herald.test/")
    assert client.get("http://rheinblatt.test/").status_code == 200  # other sites unaffected
    server.faults.clear("harbor")
    assert client.get("http://harbor-herald.test/").status_code == 200

    server.faults.set("rhein", "feed_malformed")
    response = client.get("http://rheinblatt.test/atom.xml")
    assert response.status_code == 200 and response.content
    with pytest.raises(etree.XMLSyntaxError):
        etree.fromstring(response.content)
    assert feedparser.parse(response.content).bozo
    assert client.get("http://rheinblatt.test/").status_code == 200  # only the feed breaks

    server.faults.set("rhein", "feed_empty")
    response = client.get("http://rheinblatt.test/atom.xml")
    assert response.status_code == 200 and response.content == b""

    server.faults.set("lac", "slow")
    with pytest.raises(httpx.ReadTimeout):
        client.get("http://lac-matin.test/robots.txt", timeout=0.3)

    server.faults.clear()
    assert server.faults.active() == {}
    with pytest.raises(ValueError):
        server.faults.set("harbor", "on_fire")


def test_health_and_request_log(server: NewsroomServer, newsroom: Newsroom) -> None:
    for host in ("127.0.0.1", "localhost"):
        response = httpx.get(
            f"{server.address}/__newsroom/health", headers={"Host": f"{host}:{server.port}"}
        )
        assert response.status_code == 200
        assert response.json() == {
            "newsroom": True,
            "seed": 7,
            "revision": newsroom.revision,
            "sites": {spec.key: spec.host for spec in newsroom.sites},
            "truth": False,
            "frozen_at": server.now().isoformat(),  # this server's clock is a FixedClock
        }
    last = server.requests[-1]
    assert (last["method"], last["host"], last["path"], last["status"]) == (
        "GET",
        "localhost",
        "/__newsroom/health",
        200,
    )
    assert last["at"] == AT


def test_content_bug_gives_500_and_server_survives(
    server: NewsroomServer, monkeypatch: pytest.MonkeyPatch, client: httpx.Client
) -> None:
    from newsbench_dagster.newsroom import routes

    def broken(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(routes, "respond", broken)
    assert client.get("http://harbor-herald.test/").status_code == 500
    monkeypatch.undo()
    assert client.get("http://harbor-herald.test/").status_code == 200
