"""extract_article_metadata: headline, authors, published and modified time of an article,
as the article page itself states them."""

from __future__ import annotations

from newsbench_dagster.core.reading.text import fuzzy, within
from newsbench_dagster.core.scoring.checkers.base import (
    CONFLICT_MARGIN,
    HEADLINE_MATCH,
    TIME_WINDOW_MIN,
    Component,
    Evidence,
    Verdict,
    article_signals,
    author_match,
    authors_component,
    earliest,
    failed_closed,
    headline_component,
    judged,
    page_record,
)


def metadata_conflicts(obs: dict, sig: dict) -> list[str]:
    """Where the page's own signals contradict each other beyond the margins."""
    names = sig["site_names"]
    heads = sig["headline"]
    reasons = []
    # The page's own visible headline (main h1, or the document title without the site's
    # name) settles a disagreement between its metadata, e.g. an SEO og:title next to the
    # real headline; only an unsettled disagreement fails closed.
    h1 = [
        c.get("value")
        for c in page_record(obs).get("headline_candidates", [])
        if c.get("source") in ("h1", "title") and c.get("value")
    ]
    settled = any(fuzzy(h, v, names) >= HEADLINE_MATCH for h in h1 for v in heads.values())
    if (
        len(heads) >= 2
        and min(fuzzy(a, b, names) for a in heads.values() for b in heads.values())
        < 1 - CONFLICT_MARGIN
        and not settled
    ):
        reasons.append("og:title and JSON-LD headline disagree")
    truth = sig["authors_jsonld"] or sig["authors_meta"]
    if truth and sig["bylines"] and max(author_match(b, truth) for b in sig["bylines"]) < 0.5:
        reasons.append("on-page byline contradicts the metadata authors")
    return reasons


def time_component(pred, candidates: list[str], minutes: float = TIME_WINDOW_MIN) -> Component:
    ok, gap = within(pred, candidates, minutes)
    return Component(ok, 1.0 if ok else 0.0, {"gap_minutes": gap})


def check_article_metadata(answer: dict, ev: Evidence) -> Verdict:
    entry = ev.entry
    if not entry:
        return Verdict(False, 0.0, {}, "no observation of the article page")
    sig = article_signals(entry)
    names = sig["site_names"]
    conflicts = metadata_conflicts(entry, sig)
    comps: dict[str, Component] = {
        "headline": headline_component(answer.get("headline"), sig["headline"], names),
        "published": time_component(answer.get("published"), sig["published"]),
    }
    if sig["modified"]:
        # An article that was never updated may leave `modified` empty or equal to published.
        pred = answer.get("modified") or answer.get("published")
        comps["modified"] = time_component(pred, sig["modified"])
    evidence = sig["authors_jsonld"] or sig["authors_meta"] or sig["bylines"]
    comps["byline"] = authors_component(answer.get("authors"), evidence, names)

    published = earliest(sig["published"])
    if conflicts:
        return failed_closed(comps, conflicts, published=published)
    return judged(
        comps,
        "all fields match the page",
        right_target=comps["headline"].passed,
        published=published,
    )


CHECKS = {"extract_article_metadata": check_article_metadata}
