"""find_corrections: the latest correction on an article, or "none" when the page shows none
(a correct "none" is a full pass, not a lesser one)."""

from __future__ import annotations

from newsbench_dagster.core.reading.text import within
from newsbench_dagster.core.scoring.checkers.base import (
    HEADLINE_MATCH,
    MIN_DT,
    TIME_WINDOW_MIN,
    Component,
    Evidence,
    Verdict,
    judged,
    page_record,
    same_figures,
    says_none,
    text_match,
    utc,
)


def check(answer: dict, ev: Evidence) -> Verdict:
    pages = [page_record(o) for _, o in ev.moments() if page_record(o)]
    if not pages:
        return Verdict(False, 0.0, {}, "no observation of the page")
    shown = [c for p in pages for c in p.get("corrections", [])]
    given = answer.get("corrections", answer.get("text"))
    if isinstance(given, list):
        given = given[0] if given else None
    if isinstance(given, dict):
        answer = {**answer, "time": given.get("time", answer.get("time"))}
        given = given.get("text")
    none = says_none(answer, "corrections", "text")
    if not shown:
        reason = "correctly none" if none else "the page shows no correction"
        return Verdict(none, float(none), {"none": Component(none, float(none))}, reason, none)
    latest = max(shown, key=lambda c: utc(c.get("time")) or MIN_DT)
    score = text_match(given, latest["text"])
    figures_ok = same_figures(given, latest["text"])
    comps = {
        "text": Component(
            score >= HEADLINE_MATCH and figures_ok,
            score,
            {"expected_len": len(latest["text"]), "same_figures": figures_ok},
        )
    }
    when = utc(latest.get("time"))
    if answer.get("time") is not None and when is not None:
        ok, gap = within(answer.get("time"), [when.isoformat()], TIME_WINDOW_MIN)
        comps["time"] = Component(ok, 1.0 if ok else 0.0, {"gap_minutes": gap})
    verdict = judged(comps, "the latest correction", right_target=score >= HEADLINE_MATCH)
    if none:
        verdict.reason = "answered none, but the page shows a correction"
    return verdict
