"""live_blog_latest: the newest non-pinned entry of a live blog, as the page showed it at
entry or at the end (entries arrive while the agent works; both moments are valid). A blog
that showed no such entry at any moment of the run had no answer: the run is void."""

from __future__ import annotations

from newsbench_dagster.core.reading.text import parse_time, within
from newsbench_dagster.core.scoring.checkers.base import (
    Component,
    Evidence,
    Verdict,
    judged,
    page_record,
    same_figures,
    text_match,
    utc,
)

LIVE_TEXT_MATCH = 0.8  # token-set similarity between the answer and the entry's text
LIVE_FRESH_MIN = 30.0  # the latest entry should be this recent at page load (else: stale blog)
LIVE_TIME_MIN = 5.0  # an entry's time is shown to the minute


def no_answer(ev: Evidence) -> str | None:
    """Why the run's live blog held no answer: the task's page was seen as a live blog, and no
    moment of the run showed an entry that is not pinned."""
    url = ev.task.get("entry_url")
    blogs = [
        o
        for _, o in ev.moments(url)
        if page_record(o).get("is_liveblog") or page_record(o).get("kind") == "liveblog"
    ]
    if not blogs or any(page_record(o).get("latest_update") for _, o in ev.moments()):
        return None
    return f"the live blog showed no entry but the pinned post in {len(blogs)} observation(s)"


def check(answer: dict, ev: Evidence) -> Verdict:
    latest = [
        (o, page_record(o).get("latest_update"))
        for _, o in ev.moments()
        if page_record(o).get("is_liveblog") and page_record(o).get("latest_update")
    ]
    if not latest:
        return Verdict(False, 0.0, {}, "the page shows no live-blog entries to check against")
    comps: dict[str, Component] = {}
    obs, update = max(latest, key=lambda pair: text_match(answer.get("text"), pair[1]["text"]))
    score = text_match(answer.get("text"), update["text"])
    pinned = [
        u["text"]
        for o, _ in latest
        for u in page_record(o).get("live_entries", []) + page_record(o).get("live_updates", [])
        if u.get("pinned")
    ]
    took_pinned = any(text_match(answer.get("text"), p) >= LIVE_TEXT_MATCH for p in pinned)
    figures_ok = same_figures(answer.get("text"), update["text"])
    comps["text"] = Component(
        score >= LIVE_TEXT_MATCH and not took_pinned and figures_ok,
        score,
        {"entry_id": update.get("id"), "pinned_answer": took_pinned, "same_figures": figures_ok},
    )
    update_time = utc(update.get("time"))
    if answer.get("time") is not None:
        ok, gap = within(
            answer.get("time"), [update_time.isoformat()] if update_time else [], LIVE_TIME_MIN
        )
        comps["time"] = Component(ok, 1.0 if ok else 0.0, {"gap_minutes": gap})
    seen = parse_time(obs.get("observed_at")) if obs.get("observed_at") else None
    if update_time and seen:
        fresh = (seen - update_time).total_seconds() / 60 <= LIVE_FRESH_MIN
        comps["text"].detail["fresh_at_load"] = fresh
    verdict = judged(
        comps, "the latest entry", right_target=score >= LIVE_TEXT_MATCH, published=update_time
    )
    if took_pinned:
        verdict.reason = "answered the pinned post, not the latest entry"
    return verdict
