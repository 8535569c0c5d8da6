"""The newsroom over time: rotation, reproducibility, drift, live blogs, corrections, quirks,
and the truth API checked against what the pages show over a whole simulated day."""

from __future__ import annotations

import json
import random
import socket
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from lxml import html

from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom

pytestmark = pytest.mark.heavy(25)  # about 25 s on two busy cores

AT = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)
# The lead link as each family marked it up before its first redesign: what a brittle,
# selector-based agent would have hard-coded.
V1_LEAD_SELECTOR = {
    "classic": "//article[@class='lead-story']//h1[@class='lead-headline']/a",
    "grid": "//article[@class='aufmacher']//h2[@class='aufmacher__titel']/a",
    "magazine": "//article[@class='a-la-une']//h1[@class='titre-une']/a",
}


@pytest.fixture(scope="module")
def newsroom() -> Newsroom:
    return Newsroom(seed=7)


@pytest.fixture(scope="module")
def clock() -> FixedClock:
    return FixedClock(AT)


@pytest.fixture(scope="module")
def server(newsroom: Newsroom, clock: FixedClock) -> Iterator[NewsroomServer]:
    with NewsroomServer(newsroom, clock=clock, expose_truth=True) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _clock_back(clock: FixedClock) -> Iterator[None]:
    yield
    clock.set(AT)


_clients: dict[str, httpx.Client] = {}


def fetch(server: NewsroomServer, url: str) -> httpx.Response:
    # An anonymous reader, as a crawler would be: no cookies kept between pages.
    client = _clients.get(server.address)
    if client is None:
        client = _clients[server.address] = httpx.Client(proxy=server.address, timeout=10)
    client.cookies.clear()
    return client.get(url)


def page(server: NewsroomServer, url: str) -> html.HtmlElement:
    response = fetch(server, url)
    assert response.status_code == 200, url
    return html.fromstring(response.text)


def jsonld(doc: html.HtmlElement) -> list:
    return [json.loads(t) for t in doc.xpath("//script[@type='application/ld+json']/text()")]


def itemlist_lead(doc: html.HtmlElement) -> str:
    (node,) = [n for n in jsonld(doc) if n.get("@type") == "ItemList"]
    return node["itemListElement"][0]["url"]


def test_twenty_minutes_later_the_lead_differs_and_an_instant_is_byte_identical(
    server, newsroom, clock
):
    later = AT + timedelta(minutes=20)
    twin = NewsroomServer(Newsroom(seed=7), clock=FixedClock(AT))
    with twin:
        for spec in newsroom.sites:
            home = f"{spec.origin}/"
            first = fetch(server, home).content
            # Another process-independent server at the same instant: the same bytes.
            assert fetch(twin, home).content == first, spec.key
            assert fetch(server, home).content == first
            clock.set(later)
            moved = page(server, home)
            clock.set(AT)
            before = html.fromstring(first)
            assert itemlist_lead(before) != itemlist_lead(moved), spec.key
            assert itemlist_lead(before) == newsroom.truth(spec.key, AT).lead.url
            assert itemlist_lead(moved) == newsroom.truth(spec.key, later).lead.url


def test_redesign_on_its_drift_date_breaks_a_fixed_selector_not_the_metadata(server, clock):
    newsroom = server.newsroom
    checked = 0
    for spec in newsroom.sites:
        site = newsroom.site(spec.key)
        drift = spec.drifts[0]
        # Noon local time the day before, and on, the redesign date.
        for day, expect_v1 in ((drift.on - timedelta(days=1), True), (drift.on, False)):
            local_noon = datetime(day.year, day.month, day.day, 12, tzinfo=spec.tz)
            at = local_noon.astimezone(UTC)
            clock.set(at)
            doc = page(server, f"{spec.origin}/")
            truth = newsroom.truth(spec.key, at)
            assert truth.template_version == (1 if expect_v1 else drift.version)
            links = doc.xpath(V1_LEAD_SELECTOR[spec.template])
            if expect_v1:
                assert [a.get("href") for a in links] == [site.front_page(at).lead.path]
            else:
                assert links == [], f"{spec.key}: the old selector still matches"
            # The page's own metadata names the lead in every version.
            assert itemlist_lead(doc) == truth.lead.url
            checked += 1
    assert checked == 2 * len(newsroom.sites)


def test_truth_agrees_with_the_pages_over_a_simulated_day(server, clock):
    newsroom = server.newsroom
    start = datetime(2026, 11, 29, 0, 0, tzinfo=UTC)
    rng = random.Random(7)
    articles_checked = Counter()
    # Every hour of the day, each at a different minute (rotations run on 20-60 minute cycles).
    minutes = random.Random(11)
    for step in range(0, 24 * 60, 60):
        at = start + timedelta(minutes=step + minutes.randrange(60))
        clock.set(at)
        for spec in newsroom.sites:
            truth = newsroom.truth(spec.key, at)
            # Over HTTP (test-only endpoint) the truth is the same document.
            served = httpx.get(
                f"{server.address}/__newsroom/truth",
                params={"site": spec.key, "at": at.isoformat()},
            ).json()
            assert served == truth.as_dict()

            home = page(server, f"{spec.origin}/")
            assert itemlist_lead(home) == truth.lead.url
            lead_link = home.xpath("(//main//article)[1]//*[self::h1 or self::h2]//a")
            if truth.template_version < 3:  # v3 drops the lead's <article> on purpose
                assert lead_link[0].text_content().strip() == truth.lead.headline
            assert home.xpath("//a[contains(@class,'live-teaser')]/@href") == [
                truth.liveblog["url"].removeprefix(spec.origin)
            ]

            blog = page(server, truth.liveblog["url"])
            entries = blog.xpath("//article[contains(@class,'live-entry')]")
            assert entries[0].get("data-pinned") == "true"  # pinned stays above the latest
            latest = truth.liveblog["latest"]
            if latest is None:
                assert len(entries) == 1
            else:
                assert entries[1].get("id") == latest["id"]
                assert latest["text"] in entries[1].text_content()
                (ld,) = [n for n in jsonld(blog) if n["@type"] == "LiveBlogPosting"]
                assert ld["liveBlogUpdate"][0]["articleBody"] == latest["text"]
            assert len(entries) - 1 == truth.liveblog["entries"]

            corrections = page(server, f"{spec.origin}/corrections")
            shown = corrections.xpath("//li[@class='correction-item']//a/@href")
            assert [spec.origin + p for p in shown] == [c["url"] for c in truth.corrections]

            for article in rng.sample(truth.articles, 3) + [truth.lead]:
                check_article(server, spec, article)
                articles_checked[article.quirk] += 1
    # The walk met every kind of page defect at least once.
    assert set(articles_checked) >= {None, "missing_jsonld", "og_site_prefix", "og_differs"}


def check_article(server, spec, article) -> None:
    doc = page(server, article.url)
    # Redesigns change the headline's level, never its text.
    heading = doc.xpath("(//main//article//*[self::h1 or self::h2])[1]")[0]
    assert heading.text_content().strip() == article.headline
    (og_title,) = doc.xpath("//meta[@property='og:title']/@content")
    assert og_title == article.og_title
    if article.quirk == "og_site_prefix":
        assert og_title.startswith(spec.name)
    raw = doc.xpath("//script[@type='application/ld+json']/text()")
    if article.quirk == "missing_jsonld":
        assert raw == []
    elif article.quirk == "malformed_jsonld":
        with pytest.raises(json.JSONDecodeError):
            json.loads(raw[0])
    else:
        (ld,) = [json.loads(r) for r in raw]
        assert ld["headline"] == article.headline
        assert datetime.fromisoformat(ld["dateModified"]) == article.modified
        people = [a["name"] for a in ld["author"]] if isinstance(ld["author"], list) else []
        assert people == article.authors
    (published,) = doc.xpath("//meta[@property='article:published_time']/@content")
    assert datetime.fromisoformat(published) == article.published
    assert (
        datetime.fromisoformat(published).utcoffset()
        == article.published.astimezone(spec.tz).utcoffset()
    )
    assert bool(doc.xpath("//*[@id='paywall']")) == article.paywalled
    module = doc.xpath("//aside[contains(@class,'corrections-module')]//p")
    if article.correction:
        assert article.correction["text"] in module[0].text_content()
    else:
        assert module == []
    trap = doc.xpath("//*[contains(@class,'reader-comment')] | //a[@aria-label]")
    assert bool(trap) == bool(article.trap)


def test_quirks_paywall_and_traps_come_in_their_catalog_shares(newsroom):
    for spec in newsroom.sites:
        site = newsroom.site(spec.key)
        stories = [site.story(k) for k in range(3000)]
        counts = Counter(s.quirk for s in stories)
        for quirk, share in spec.quirks.items():
            assert abs(counts[quirk] / len(stories) - share) < 0.02, (spec.key, quirk)
        paywalled = sum(s.paywalled for s in stories) / len(stories)
        assert abs(paywalled - spec.paywall_share) < 0.02, spec.key
        traps = sum(bool(s.trap) for s in stories) / len(stories)
        assert (traps > 0.2) == spec.adversarial, spec.key
        assert sum(len(s.authors) >= 2 for s in stories) > 0  # several authors happen


def test_live_blog_grows_and_articles_get_corrected(server, newsroom, clock):
    site = newsroom.site("harbor")
    blog = site.current_liveblog(AT)
    assert len(blog.entries(AT + timedelta(hours=1))) > len(blog.entries(AT))
    assert all(len(e.text) > 140 for e in blog.all_entries)
    story = next(s for s in site.stories(AT, 200) if s.correction and s.correction.at > s.published)
    clock.set(story.correction.at - timedelta(seconds=1))
    before = page(server, story.url)
    clock.set(story.correction.at)
    after = page(server, story.url)
    assert not before.xpath("//aside[contains(@class,'corrections-module')]")
    assert story.correction.text in after.xpath("string(//aside[contains(@class,'corrections')])")
    (modified,) = after.xpath("//meta[@property='article:modified_time']/@content")
    assert datetime.fromisoformat(modified) == story.correction.at
    clock.set(AT)


def test_amp_variants_point_back_to_the_canonical_article(server, newsroom):
    assert all(s.amp for s in newsroom.sites)  # the catalog default; a site may opt out
    for spec in newsroom.sites:
        story = newsroom.site(spec.key).stories(AT, 1)[0]
        doc = page(server, story.url)
        amp = doc.xpath("//link[@rel='amphtml']/@href")
        assert bool(amp) == spec.amp
        if amp:
            amp_doc = page(server, spec.origin + amp[0])
            assert amp_doc.xpath("//link[@rel='canonical']/@href") == [story.url]
            assert amp_doc.xpath("//h1")[0].text_content() == story.headline


def test_slow_routes_answer_late(newsroom):
    from newsbench_dagster.newsroom.routes import respond

    site = newsroom.site("harbor")
    assert respond(site, "/fragments/most-read", AT).delay >= 0.5  # the spinner's route
    assert respond(site, "/search?q=mayor", AT).delay > 0
    assert respond(site, "/", AT).delay == 0


def test_robots_announce_disallowed_paths_and_a_crawl_delay(server, newsroom):
    for spec in newsroom.sites:
        text = fetch(server, f"{spec.origin}/robots.txt").text
        assert f"Crawl-delay: {spec.crawl_delay}" in text
        assert "Disallow: /private/" in text and "Disallow: /api/" in text


def test_truth_endpoint_is_off_by_default(newsroom):
    with NewsroomServer(newsroom) as plain:
        response = httpx.get(f"{plain.address}/__newsroom/truth", params={"site": "harbor"})
        assert response.status_code == 404
    assert "truth" not in fetch_all_sites_text(newsroom)


def fetch_all_sites_text(newsroom: Newsroom) -> str:
    """Nothing a site serves mentions the truth API."""
    with NewsroomServer(newsroom, clock=FixedClock(AT)) as srv:
        return " ".join(
            fetch(srv, f"{s.origin}/").text + fetch(srv, f"{s.origin}/robots.txt").text
            for s in newsroom.sites
        ).replace("Truth", "")


def test_bad_input_gets_the_sites_404_and_never_a_crash(server, newsroom):
    rng = random.Random(11)
    alphabet = "abc/%?&=#._-~ü😀\\'\"<>;"
    methods = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"]
    paths = [
        "/../../etc/passwd",
        "/%ZZ%",
        "/search?q=%ZZ&q=",
        "/news/city/?page=abc",
        "/artikel/99999999999999999999-x.html",
        "/live/2026-13-45/x",
        "/s/abc",
        "/api/fulltext/-99999999",
        "/amp/",
        "/" + "a" * 5000,
        "/fragments/most-read?x=" + "%" * 50,
        "/corrections/report?url=javascript:alert(1)",
    ]
    paths += [
        "/" + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(150)
    ]
    statuses = Counter()
    with httpx.Client(proxy=server.address, timeout=10) as client:
        for path in paths:
            for spec in rng.sample(newsroom.sites, 2):
                method = rng.choice(methods)
                body = rng.randbytes(rng.randint(0, 300)) if method in ("POST", "PUT") else None
                headers = {"Cookie": "nr_sid=\x7f; nr_meter=-1;;", "X-Newsroom-Geo": "??"}
                try:
                    response = client.request(
                        method, f"{spec.origin}{path}", content=body, headers=headers
                    )
                except httpx.InvalidURL:
                    continue  # the client refuses to send it; nothing reached the server
                statuses[response.status_code] += 1
                assert response.status_code < 500, (method, path, response.status_code)
                if response.status_code == 404 and method == "GET":
                    assert spec.name in response.text  # the site's own 404 page
    assert statuses[404] > 50
    # Raw garbage on the socket does not take the server down.
    for junk in (b"\x00\xff garbage\r\n\r\n", b"GET\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n"):
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            sock.sendall(junk)
            sock.recv(100)
    assert fetch(server, "http://harbor-herald.test/").status_code == 200


def test_a_readers_first_page_starts_a_session_that_scopes_their_state(server):
    with httpx.Client(proxy=server.address, timeout=10) as reader:
        first = reader.get("http://harbor-herald.test/newsletter")
        assert "nr_sid=" in first.headers.get("set-cookie", "")
        sid = reader.cookies["nr_sid"]
        again = reader.get("http://harbor-herald.test/")
        assert "nr_sid=" not in again.headers.get("set-cookie", "")  # kept, not replaced
        form = {"email": "a@example.org", "lists": "daily", "terms": "on"}
        reader.post("http://harbor-herald.test/newsletter", data=form)
    signups = server.state.events(f"sid:{sid}", kind="newsletter_signup")
    assert len(signups) == 1
    assert server.state.peek("anon") is None or not server.state.peek("anon").newsletter
