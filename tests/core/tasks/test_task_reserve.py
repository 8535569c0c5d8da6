"""The held-out reserve: every other answerable task of a poll, beside the day's few picks,
which the daily evaluation alone would run (issue 50 step 1)."""

from __future__ import annotations

from collections import Counter

from newsbench_dagster.core.release.plan import distinct_questions
from newsbench_dagster.core.tasks.contract import validation_errors
from newsbench_dagster.core.tasks.intents import ALL_INTENTS, READ_INTENTS, Context
from newsbench_dagster.core.tasks.poll import poll_site
from newsbench_dagster.core.tasks.produce import DAILY, RESERVE, make_tasks


def test_the_reserve_keeps_the_days_tasks_and_adds_every_other_answerable_one(
    registry, fetcher, today
):
    harbor, rhein = registry.get("harbor"), registry.get("rhein")
    rows = poll_site(harbor, fetcher, None, today)
    daily = make_tasks(harbor, today, rows, partner=rhein)
    pool = make_tasks(harbor, today, rows, partner=rhein, reserve=True)

    # The day's tasks are untouched, first, and still the only "live" ones.
    assert pool[: len(daily)] == daily and {t["suite"] for t in daily} == {DAILY}
    reserve = pool[len(daily) :]
    assert {t["suite"] for t in reserve} == {RESERVE}
    assert len({t["id"] for t in pool}) == len(pool)
    assert all(validation_errors(t) == [] for t in reserve)

    ctx = Context(harbor, today, rows)
    articles = {r.item_url for r in ctx.newest}
    entries = Counter((t["intent"], t["entry_url"]) for t in pool)
    # Every article the poll found is asked about once per article intent...
    for intent in ("extract_article_metadata", "locate_factbox"):
        assert {u for (i, u) in entries if i == intent} == articles
        assert all(entries[(intent, u)] == 1 for u in articles)
    # ...the older half for corrections (a correction comes hours after publication)...
    older = {r.item_url for r in ctx.newest[len(ctx.newest) // 2 :]}
    assert {u for (i, u) in entries if i == "find_corrections"} == older
    # ...every story but the lead by its headline from the front page, never its link...
    who = [t for t in pool if t["intent"] == "find_author_and_time"]
    assert {t["oracle"]["target_url"] for t in who} == articles - {ctx.newest[0].item_url}
    assert all(t["inputs"]["headline"] in t["inputs"]["prompt"] for t in who)
    assert not any(t["oracle"]["target_url"] in t["inputs"]["prompt"] for t in who)
    # ...and every section of the navigation.
    sections = {r.item_url for r in ctx.sections}
    assert {t["inputs"]["topic"] for t in pool if t["intent"] == "identify_topic_page"} == {
        r.title for r in ctx.sections
    }
    assert {u for (i, u) in entries if i == "summarize_topic"} == sections
    # The state intents keep their one task a day: they share the day's address.
    for intent in ("newsletter_signup", "subscribe_checkout", "report_correction"):
        assert [t for t in reserve if t["intent"] == intent] == []
    assert len(reserve) > 3 * len(articles)
    assert set(ALL_INTENTS) == {t["intent"] for t in pool}


def test_a_question_asked_on_two_days_is_one_held_out_task(registry, fetcher, today):
    """Yesterday's poll and today's see many of the same articles: one question each in the
    gate's pool (their ids differ by the day), as made on the latest day."""
    from datetime import timedelta

    harbor = registry.get("harbor")
    rows = poll_site(harbor, fetcher, None, today)
    yesterday = today - timedelta(days=1)
    both = [
        *make_tasks(harbor, yesterday, rows, intents=READ_INTENTS, reserve=True),
        *make_tasks(harbor, today, rows, intents=READ_INTENTS, reserve=True),
    ]
    assert len({t["id"] for t in both}) == len(both)  # two days, two ids per question
    pool = distinct_questions(both)
    assert len(pool) == len(both) // 2
    assert {t["day"] for t in pool} == {today.isoformat()}
    # A state task names the day's own reader address: another day's is another task.
    signups = make_tasks(harbor, yesterday, rows, intents=("newsletter_signup",)) + make_tasks(
        harbor, today, rows, intents=("newsletter_signup",)
    )
    assert len(distinct_questions(signups)) == len(signups) == 4
    # A different question on the same page stays: the same article, another intent.
    assert len({(t["intent"], t["entry_url"]) for t in pool}) == len(
        {(t["intent"], t["entry_url"]) for t in both}
    )
