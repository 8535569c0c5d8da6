"""The pure content model: determinism, the story stream, front pages, paths."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from rapidfuzz import fuzz

from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.routes import respond
from newsbench_dagster.newsroom.text import slugify
from newsbench_dagster.newsroom.world import Newsroom

AT = datetime(2026, 3, 10, 14, 7, tzinfo=UTC)


@pytest.fixture(scope="module")
def newsroom() -> Newsroom:
    return Newsroom(seed=7)


def test_catalog_sites(newsroom: Newsroom) -> None:
    keys = {spec.key: spec for spec in newsroom.sites}
    assert {"harbor", "rhein", "lac"} <= set(keys) and len(keys) >= 6
    assert {s.template for s in keys.values()} == {"classic", "grid", "magazine"}
    assert {s.language for s in keys.values()} >= {"en", "de", "fr"}
    assert len({s.host for s in keys.values()}) == len(keys)
    harbor = keys["harbor"]
    assert harbor.host == "harbor-herald.test"
    assert harbor.origin == "http://harbor-herald.test"
    assert (harbor.template, harbor.feed_kind, harbor.feed_path) == (
        "classic",
        "rss",
        "/feeds/latest.xml",
    )
    assert (keys["rhein"].language, keys["rhein"].feed_kind) == ("de", "atom")
    assert keys["lac"].template == "magazine"


def test_site_for_host(newsroom: Newsroom) -> None:
    assert newsroom.site_for_host("harbor-herald.test").key == "harbor"
    assert newsroom.site_for_host("Harbor-Herald.TEST:80").key == "harbor"
    assert newsroom.site_for_host("rheinblatt.test:8411").key == "rhein"
    assert newsroom.site_for_host("x.example") is None
    with pytest.raises(KeyError):
        newsroom.site("nope")


def test_same_seed_same_content_different_seed_different_headlines() -> None:
    a, b, other = Newsroom(seed=7), Newsroom(seed=7), Newsroom(seed=8)
    for spec in a.sites:
        site_a, site_b = a.site(spec.key), b.site(spec.key)
        lead = site_a.front_page(AT).lead
        for path in ["/", lead.path, spec.feed_path, "/sitemap-news.xml"]:
            assert respond(site_a, path, AT).body == respond(site_b, path, AT).body
        mine = {s.headline for s in site_a.stories(AT, 10)}
        theirs = {s.headline for s in other.site(spec.key).stories(AT, 10)}
        assert len(mine & theirs) <= 1


def test_stream_times(newsroom: Newsroom) -> None:
    for spec in newsroom.sites:
        site = newsroom.site(spec.key)
        interval = timedelta(minutes=spec.story_interval_minutes)
        for k in range(-5, 200):
            offset = site.published_at(k) - (newsroom.epoch + k * interval)
            assert timedelta(0) <= offset < interval / 2
        k = site.latest_k(AT)
        assert site.published_at(k) <= AT < site.published_at(k + 1)
        stories = site.stories(AT, 20)
        assert [s.k for s in stories] == list(range(k, k - 20, -1))
        assert all(s.published <= AT and s.published.tzinfo is not None for s in stories)
        # Exactly at publication the story is live; one second before it is not.
        newest = site.story(k)
        assert site.latest_k(newest.published) == k
        assert site.latest_k(newest.published - timedelta(seconds=1)) == k - 1


def test_story_fields(newsroom: Newsroom) -> None:
    site = newsroom.site("harbor")
    stories = [site.story(k) for k in range(0, 300)]
    for story in stories:
        assert story.site == "harbor" and story.section in site.spec.sections
        # A byline that is only the site's name names nobody.
        assert (story.quirk == "byline_is_site") == (not story.authors)
        assert len(story.authors) <= 2 and 4 <= len(story.body) <= 6
        assert story.headline and story.summary and story.slug == slugify(story.headline)
        assert story.url == "http://harbor-herald.test" + story.path
    two_authors = sum(len(s.authors) == 2 for s in stories)
    assert 0 < two_authors < len(stories) / 2  # mostly one author


def test_updates(newsroom: Newsroom) -> None:
    site = newsroom.site("rhein")
    stories = [site.story(k) for k in range(400)]
    updated = [s for s in stories if s.updated_at is not None]
    assert 0.35 < len(updated) / len(stories) < 0.65
    for story in updated:
        delay = story.updated_at - story.published
        assert timedelta(minutes=20) <= delay <= timedelta(minutes=180)
        assert story.modified_at(story.updated_at - timedelta(seconds=1)) == story.published
        assert story.modified_at(story.updated_at) == story.updated_at
    never = next(s for s in stories if s.updated_at is None)
    assert never.modified_at(never.published + timedelta(days=30)) == never.published


def test_nearby_headlines_are_clearly_different(newsroom: Newsroom) -> None:
    for spec in newsroom.sites:
        site = newsroom.site(spec.key)
        window = [site.story(k).headline for k in range(1000, 1040)]
        for i, a in enumerate(window):
            for b in window[i + 1 : i + 12]:
                assert fuzz.token_sort_ratio(a, b) < 70, (a, b)


def test_front_page_shape_and_rotation(newsroom: Newsroom) -> None:
    for spec in newsroom.sites:
        site = newsroom.site(spec.key)
        leads, not_newest = set(), 0
        for minutes in range(0, 24 * 60, spec.lead_rotation_minutes):
            at = AT + timedelta(minutes=minutes)
            front = site.front_page(at)
            k = site.latest_k(at)
            assert front.lead.k in {k, k - 1, k - 2}
            assert [s.k for s in front.others] == [
                j for j in range(k, k - 9, -1) if j != front.lead.k
            ]
            assert len(front.most_read) == 5
            assert all(k - 20 <= s.k <= k - 9 for s in front.most_read)
            leads.add(front.lead.k)
            not_newest += front.lead.k != k
        assert len(leads) > 10
        assert not_newest > 5  # the lead is often not the newest feed item
        # Within one window the choice holds still (absent a newly published story).
        front = site.front_page(AT)
        assert site.front_page(AT + timedelta(seconds=1)).lead == front.lead


def test_paths_round_trip(newsroom: Newsroom) -> None:
    patterns = {  # the URL scheme belongs to the template family
        "classic": r"^/news/[a-z]+/[a-z0-9-]+-\d+$",
        "grid": r"^/artikel/\d+-[a-z0-9-]+\.html$",
        "magazine": r"^/\d{4}/\d{2}/\d{2}/[a-z0-9-]+_\d+$",
    }
    for spec in newsroom.sites:
        site = newsroom.site(spec.key)
        for story in site.stories(AT, 30):
            assert re.match(patterns[spec.template], story.path), story.path
            assert site.story_for_path(story.path, AT) == story
        future = site.story(site.latest_k(AT) + 1)
        assert site.story_for_path(future.path, AT) is None
        assert site.story_for_path(future.path, future.published) == future
        assert site.story_for_path("/nope", AT) is None
    # The magazine date is the local (Paris) date: 23:30 UTC is already the next day there.
    lac = newsroom.site("lac")
    late = next(lac.story(k) for k in range(0, 500) if lac.story(k).published.hour == 23)
    local_day = late.published.astimezone(lac.spec.tz).date()
    assert late.path.startswith(local_day.strftime("/%Y/%m/%d/"))
    # A story number with the wrong slug is not a story.
    story = newsroom.site("harbor").stories(AT, 1)[0]
    assert newsroom.site("harbor").story_for_path(story.path.replace(story.slug, "x"), AT) is None


def test_fixed_clock_and_revision(newsroom: Newsroom) -> None:
    clock = FixedClock(datetime(2026, 3, 10, 9, 0))  # naive = UTC
    assert clock() == datetime(2026, 3, 10, 9, 0, tzinfo=UTC)
    clock.advance(timedelta(minutes=5))
    assert clock().minute == 5
    assert re.fullmatch(r"[0-9a-f]{12}", newsroom.revision)
    assert Newsroom(seed=3).revision == newsroom.revision  # content code, not seed
