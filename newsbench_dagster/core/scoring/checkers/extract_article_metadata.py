"""extract_article_metadata: headline, authors, published and modified time of an article,
as the article page itself states them."""

from __future__ import annotations

from newsbench_dagster.core.scoring.checkers.base import (
    Component,
    Evidence,
    Verdict,
    article_signals,
    contested_authors,
    earliest,
    failed_closed,
    headline_component,
    judged,
    metadata_conflicts,
    time_component,
)


def check(answer: dict, ev: Evidence) -> Verdict:
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
    comps["byline"] = contested_authors(answer.get("authors"), sig, names, conflicts)

    published = earliest(sig["published"])
    if conflicts:
        return failed_closed(comps, conflicts, published=published)
    return judged(
        comps,
        "all fields match the page",
        right_target=comps["headline"].passed,
        published=published,
    )
