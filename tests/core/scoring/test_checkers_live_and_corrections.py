"""Oracles for live_blog_latest and find_corrections against real newsroom pages in Chromium:
each accepts the right answer and rejects wrong ones (the pinned post, an older entry, an
invented correction, "none" when there is one)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from newsbench_dagster.core.scoring.checkers import check
from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom

# Mid-afternoon in Paris: the day's live blog has been running for hours.
LIVE_AT = datetime(2026, 11, 30, 14, 30, tzinfo=UTC)


@pytest.fixture(scope="module")
def live(observe_with):
    newsroom = Newsroom(seed=7)
    site = newsroom.site("lac")
    blog = site.current_liveblog(LIVE_AT)
    with NewsroomServer(newsroom, clock=FixedClock(LIVE_AT)) as server:
        (obs,) = observe_with(server, [blog.url])
    entries = blog.entries(LIVE_AT)
    assert len(entries) >= 2 and blog.live(LIVE_AT)
    return obs, blog, entries


def test_live_blog_latest_accepts_the_newest_entry(live):
    obs, blog, entries = live
    v = check("live_blog_latest", {"text": entries[0].text}, obs, obs)
    assert v.success, v.as_dict()
    with_time = {"text": entries[0].text, "time": entries[0].published.isoformat()}
    assert check("live_blog_latest", with_time, obs, obs).success


def test_live_blog_latest_rejects_pinned_older_and_empty(live):
    obs, blog, entries = live
    pinned = check("live_blog_latest", {"text": blog.pinned.text}, obs, obs)
    assert not pinned.success and "pinned" in pinned.reason
    assert not check("live_blog_latest", {"text": entries[1].text}, obs, obs).success
    assert not check("live_blog_latest", {"text": ""}, obs, obs).success
    stale_time = {"text": entries[0].text, "time": entries[1].published.isoformat()}
    if (entries[0].published - entries[1].published).total_seconds() > 300:
        assert not check("live_blog_latest", stale_time, obs, obs).success


def test_live_blog_checker_needs_a_live_blog(newsroom_server, observe_urls):
    site = newsroom_server.newsroom.site("lac")
    (home,) = observe_urls([site.url("/")])
    v = check("live_blog_latest", {"text": "anything"}, home, home)
    assert not v.success and "no live-blog entries" in v.reason


@pytest.fixture(scope="module")
def corrected_and_plain(newsroom_server, observe_urls):
    site = newsroom_server.newsroom.site("rhein")
    now = newsroom_server.now()
    recent = site.stories(now, 200)
    corrected = next(s for s in recent if s.correction_at(now))
    plain = next(s for s in recent if s.correction is None)
    obs_c, obs_p = observe_urls([corrected.url, plain.url])
    return (obs_c, corrected), (obs_p, plain)


def test_find_corrections_accepts_the_correction_and_a_correct_none(corrected_and_plain):
    (obs_c, story), (obs_p, _) = corrected_and_plain
    right = {"text": story.correction.text, "time": story.correction.at.isoformat()}
    v = check("find_corrections", right, obs_c, obs_c)
    assert v.success, v.as_dict()
    as_list = {"corrections": [{"text": story.correction.text}]}
    assert check("find_corrections", as_list, obs_c, obs_c).success
    none = check("find_corrections", {"corrections": []}, obs_p, obs_p)
    assert none.success and none.accuracy == 1.0  # a correct "none" is not penalised


def test_find_corrections_rejects_none_when_present_and_invented_ones(corrected_and_plain):
    (obs_c, story), (obs_p, _) = corrected_and_plain
    missed = check("find_corrections", {"none": True}, obs_c, obs_c)
    assert not missed.success and "page shows a correction" in missed.reason
    invented = {"text": "An earlier version misspelled the mayor's name."}
    assert not check("find_corrections", invented, obs_c, obs_c).success
    assert not check("find_corrections", invented, obs_p, obs_p).success
    late = {"text": story.correction.text, "time": "2001-01-01T00:00:00Z"}
    assert not check("find_corrections", late, obs_c, obs_c).success
