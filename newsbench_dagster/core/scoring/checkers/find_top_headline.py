"""find_top_headline: the lead story of a front page, as the page showed it at any moment of
the run's window (the lead may rotate while the agent works)."""

from __future__ import annotations

from newsbench_dagster.core.reading.text import fuzzy
from newsbench_dagster.core.scoring.checkers.base import (
    CONFLICT_MARGIN,
    HEADLINE_MATCH,
    Component,
    Evidence,
    Verdict,
    article_signals,
    earliest,
    headline_component,
    lead_candidates,
    same_page,
    site_names,
)


def settle(c: dict[str, str], names: tuple[str, ...]) -> tuple[dict[str, str], bool]:
    """The candidates that agree, and whether the page's top signals still disagree. When they
    disagree, the page's ItemList settles it: keep the signals that agree with it (e.g. the
    lead's heading) and drop the outvoted one (a bigger sponsored heading)."""
    tops = list(c.values())
    disagree = any(fuzzy(a, b, names) < 1 - CONFLICT_MARGIN for a in tops for b in tops)
    listed = c.get("jsonld_itemlist")
    if disagree and listed:
        agreeing = {k: v for k, v in c.items() if fuzzy(v, listed, names) >= HEADLINE_MATCH}
        if len(agreeing) >= 2:
            return agreeing, False
    return c, disagree


def check(answer: dict, ev: Evidence) -> Verdict:
    pred = answer.get("headline")
    entry_url = (ev.entry or {}).get("url") or ev.task.get("entry_url")
    # Entry, final (if the agent came back to the front page) and the harness's probes of the
    # entry page are all valid moments of the window.
    moments = dict(ev.moments(entry_url))
    homepages = list(moments.values())
    comps: dict[str, Component] = {}
    leads = [(o, lead_candidates(o)) for o in homepages]
    comps["lead_heading_in_main"] = Component(
        any(o.get("has_main") and c.get("first_article_heading") for o, c in leads), 1.0
    )
    lead_urls = [o["lead"]["href"] for o in homepages if (o.get("lead") or {}).get("href")]

    # If the agent opened the lead article, its own metadata names the headline too.
    final = ev.final
    article = None
    if final and any(same_page(final.get("canonical") or final.get("url"), u) for u in lead_urls):
        article = article_signals(final)
    names = site_names(final or {}) + site_names(ev.entry or {})

    candidates: dict[str, str] = {}
    conflict = False
    for moment, (_, c) in zip(moments, leads, strict=True):
        c, disagree = settle(c, names)
        if disagree and not (
            article
            and any(
                fuzzy(t, h, names) >= HEADLINE_MATCH
                for t in c.values()
                for h in article["headline"].values()
            )
        ):
            conflict = True
        candidates.update({f"{k}@{moment}": v for k, v in c.items()})
    if article:
        candidates.update({f"article_{k}": v for k, v in article["headline"].items()})

    comps["headline"] = headline_component(pred, candidates, names)
    answer_url = answer.get("url")
    url_ok = any(same_page(answer_url, u) for u in lead_urls)
    comps["url"] = Component(
        url_ok, 1.0 if url_ok else 0.0, {"answer": answer_url, "lead": lead_urls[:2]}
    )
    accuracy = comps["headline"].score * 0.7 + (0.3 if url_ok else 0.0)
    published = earliest(article["published"]) if article else None
    if not pred:
        return Verdict(False, 0.0, comps, "no headline in the answer", published=published)
    if conflict:
        return Verdict(
            False,
            0.0,
            comps,
            "failed closed: the page's top-story signals disagree and no metadata settles it",
            conflict=True,
            published=published,
        )
    success = comps["headline"].passed and url_ok and comps["lead_heading_in_main"].passed
    right_target = url_ok or comps["headline"].passed
    if success:
        reason = "matches the lead story"
    elif not comps["headline"].passed:
        reason = "headline does not match the lead"
    else:
        reason = "link is not the lead story"
    return Verdict(
        success, round(accuracy, 3), comps, reason, right_target=right_target, published=published
    )
