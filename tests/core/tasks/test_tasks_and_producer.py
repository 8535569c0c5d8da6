"""The producer against the newsroom: feeds polled politely, tasks schema-valid and stable."""

from __future__ import annotations

import copy

import pytest

from newsbench_dagster.core.errors import InvalidTask
from newsbench_dagster.core.tasks.contract import task_id, validate_task, validation_errors
from newsbench_dagster.core.tasks.poll import poll_site
from newsbench_dagster.core.tasks.produce import make_tasks
from tests.support.newsroom_clock import frozen_now
from tests.support.tasks import LEAD_AND_METADATA


@pytest.fixture
def harbor_rows(registry, fetcher, today, newsroom):
    # The newsroom's clock stopped from the poll to the test's end: a story published between
    # the poll and the truth it is compared with made the two differ (seen once in a run).
    with frozen_now(newsroom):
        yield poll_site(registry.get("harbor"), fetcher, None, today)


def test_poll_reads_feed_sitemap_and_homepage(harbor_rows, newsroom):
    kinds = {r.kind for r in harbor_rows if r.item_url}
    # ...and the live blog the homepage links to (no item in the minutes after it opens).
    assert kinds - {"liveblog"} == {"rss", "sitemap", "homepage"}
    truth = newsroom.newsroom.site("harbor").stories(newsroom.now(), limit=20)
    rss = [r for r in harbor_rows if r.kind == "rss"]
    assert [r.title for r in rss][:5] == [s.headline for s in truth][:5]
    assert all(r.language == "en" and r.parse_error is None for r in harbor_rows)
    home = [r for r in harbor_rows if r.kind == "homepage"]
    # The homepage's first link under <main> is the lead, which need not be the newest item.
    assert (
        home[0].title == newsroom.newsroom.site("harbor").front_page(newsroom.now()).lead.headline
    )


def test_tasks_are_valid_and_deterministic(registry, harbor_rows, today):
    site = registry.get("harbor")
    tasks = make_tasks(site, today, harbor_rows, intents=LEAD_AND_METADATA)
    again = make_tasks(site, today, list(reversed(harbor_rows)), intents=LEAD_AND_METADATA)
    assert [t["id"] for t in tasks] == sorted(t["id"] for t in again) or sorted(
        t["id"] for t in tasks
    ) == sorted(t["id"] for t in again)
    intents = [t["intent"] for t in tasks]
    assert intents.count("find_top_headline") == 1
    assert intents.count("extract_article_metadata") == 3
    for t in tasks:
        assert validation_errors(t) == []
        assert t["id"] == task_id("harbor", today, t["intent"], t["entry_url"])
        assert t["constraints"]["respect_robots"] is True
        assert t["allowed_origins"] == ["http://harbor-herald.test"]
        # Blind labels: the prompt never names a checker or a threshold.
        assert "fuzzy" not in t["inputs"]["prompt"] and "og:" not in t["inputs"]["prompt"]


def test_prompts_in_site_language(registry, fetcher, today):
    rows = poll_site(registry.get("rhein"), fetcher, None, today)
    tasks = make_tasks(registry.get("rhein"), today, rows, intents=LEAD_AND_METADATA)
    assert any("Aufmacher" in t["inputs"]["prompt"] for t in tasks)


def test_schema_rejects_unknown_and_bad_fields_with_their_path(registry, harbor_rows, today):
    good = make_tasks(registry.get("harbor"), today, harbor_rows, intents=LEAD_AND_METADATA)[0]
    bad = copy.deepcopy(good)
    bad["constraints"]["max_stepz"] = 3
    bad["constraints"]["respect_robots"] = False
    bad["intent"] = "buy_a_car"
    errors = validation_errors(bad)
    assert any(e.startswith("$.constraints") and "max_stepz" in e for e in errors)
    assert any(e.startswith("$.constraints.respect_robots") for e in errors)
    assert any(e.startswith("$.intent") for e in errors)
    with pytest.raises(InvalidTask, match=good["id"]):
        validate_task(bad)
    assert validation_errors("not a task")


def test_malformed_and_empty_feeds_become_error_rows(registry, fetcher, newsroom, today):
    site = registry.get("harbor")
    newsroom.faults.set("harbor", "feed_malformed")
    rows = poll_site(site, fetcher, None, today)
    rss = [r for r in rows if r.kind == "rss"]
    # Whatever feedparser salvages is kept, and every row says the feed was malformed.
    assert rss and all("not a valid feed" in r.parse_error for r in rss)
    assert len(rss) < 20
    # The other sources still produce items and tasks.
    assert make_tasks(site, today, rows, intents=LEAD_AND_METADATA)
    newsroom.faults.set("harbor", "feed_empty")
    rows = poll_site(site, fetcher, None, today)
    assert [r.parse_error for r in rows if r.kind == "rss"] == ["empty document"]


def test_site_down_yields_error_rows_and_no_tasks(registry, fetcher, newsroom, today):
    newsroom.faults.set("lac", "down")
    rows = poll_site(registry.get("lac"), fetcher, None, today)
    assert rows and all(r.item_url is None for r in rows)
    assert all(r.fetch_status == "refused" for r in rows)  # robots.txt unreachable: fetch nothing
    assert make_tasks(registry.get("lac"), today, rows, intents=LEAD_AND_METADATA) == []


def test_homepage_navigation_gives_sections_and_the_live_blog(harbor_rows, newsroom):
    site = newsroom.newsroom.site("harbor")
    home = [r for r in harbor_rows if r.kind == "homepage"]
    sections = [r for r in home if r.role == "section"]
    assert [r.item_url for r in sections] == [
        site.url(site.section_path(s)) for s in site.spec.sections
    ]
    lives = [r for r in home if r.role == "live"]
    assert [r.item_url for r in lives] == [site.current_liveblog(newsroom.now()).url]
    # Stories keep their order, first; navigation never becomes a story task.
    assert all(r.role == "story" for r in home[: len(home) - len(sections) - len(lives)])


def test_every_intent_is_produced_valid_from_real_inputs(registry, fetcher, today):
    from newsbench_dagster.core.tasks.contract import task_schema
    from newsbench_dagster.core.tasks.intents import ALL_INTENTS

    harbor, rhein = registry.get("harbor"), registry.get("rhein")
    rows = poll_site(harbor, fetcher, None, today)
    tasks = make_tasks(harbor, today, rows, 1, ALL_INTENTS, partner=rhein)
    # (the tasks whose right ending is a stop share intents with the others: apart)
    by_intent = {t["intent"]: t for t in tasks if t["oracle"].get("stop") not in ("ask", "refuse")}
    assert set(by_intent) == set(ALL_INTENTS)
    assert set(ALL_INTENTS) <= set(task_schema()["properties"]["intent"]["enum"])
    assert len({t["id"] for t in tasks}) == len(tasks)  # same entry page, distinct tasks
    who = by_intent["find_author_and_time"]
    assert who["inputs"]["headline"] in who["inputs"]["prompt"]
    assert who["oracle"]["target_url"] not in who["inputs"]["prompt"]  # the agent must find it
    compare = by_intent["compare_outlets"]
    assert compare["allowed_origins"] == sorted(harbor.allowed_origins + rhein.allowed_origins)
    assert {p["url"] for p in compare["oracle"]["probes"]} == {rhein.home, "{entry}"}
    assert by_intent["subscribe_checkout"]["oracle"]["stop"] == "approval"
    signup = by_intent["newsletter_signup"]["oracle"]
    assert (signup["kind"], signup["allowed_changes"]) == ("server_state", ["newsletter_signup"])
    # Blind labels: agents are never shown the oracle section.
    from newsbench_dagster.core.agents.protocol import AgentTask

    assert "oracle" not in AgentTask.from_task(who).model_dump()
    # The same rows give the same tasks.
    again = make_tasks(harbor, today, list(rows), 1, ALL_INTENTS, partner=rhein)
    assert [t["id"] for t in again] == [t["id"] for t in tasks]
