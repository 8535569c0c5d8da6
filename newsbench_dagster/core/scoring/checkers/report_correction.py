"""report_correction: one correction report on the task's site, about the given article and
describing the given problem (tolerant of paraphrase, see `describes`), read from the world's
event log (see `state_base`).

Inputs (`task["inputs"]`): {"article_url": str, "problem": str, "email": str (optional)}.
"""

from __future__ import annotations

import re
from os.path import commonprefix
from typing import Any

from newsbench_dagster.core.reading.text import entities, normalize_text
from newsbench_dagster.core.scoring.checkers.base import (
    Evidence,
    Verdict,
    flag,
    same_page,
    text_match,
)
from newsbench_dagster.core.scoring.checkers.state_base import (
    event_data,
    fold,
    no_other_changes,
    own_events,
    same_email,
    state_unknown,
    state_verdict,
)

# Content words that say nothing about which problem a text describes (en, de, fr).
_STOPWORD_TEXT = """
    the and but not nor for with from that this these those there their they them than then
    was were are been being has have had its into onto out over under about also only just
    very more most some any all each such what which who whom whose when where why how
    article story page says said say states stated should would could will shall does did
    wrong incorrect error mistake correct correction actually instead fact please report
    der die das den dem des ein eine einer eines und oder aber nicht ist sind war waren wird
    werden hat haben mit von für auf aus bei nach über unter sich auch nur noch wie was wer
    artikel falsch fehler richtig statt
    les des une est sont été avec pour par dans sur sous pas que qui quoi dont mais donc car
    ses son aux cette ces leur leurs faux erreur
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"[^\W\d_]{3,}")
_NUMBER = re.compile(r"\d+(?:[.,'\u2019]\d+)*")
_QUOTED = re.compile(r'"([^"]{3,})"')
FACT_WORDS = 0.25  # share of the problem's content words a report with its key facts needs
PLAIN_WORDS = 0.5  # ...and a report of a problem without figures or names


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(fold(normalize_text(text))) if w not in _STOPWORDS]


def _numbers(text: str) -> set[str]:
    # Separators dropped: "45,000", "45.000" and "45000" are one figure.
    return {re.sub(r"\D", "", n) for n in _NUMBER.findall(normalize_text(text))}


def _same_word(a: str, b: str) -> bool:
    """Crude stemming: "vote"/"voted", "council"/"councillors" share their first letters."""
    p = len(commonprefix([a, b]))
    return p >= min(len(a), len(b), 5) and (p >= 4 or a == b)


def _found(word: str, words: list[str]) -> bool:
    return any(_same_word(word, w) for w in words)


def describes(problem: str, text: str) -> tuple[bool, dict[str, Any]]:
    """Whether a report `text` describes the `problem`, tolerant of paraphrase.

    Key facts are the figures of `problem` (digit runs; separators ignored), its names (runs of
    two or more capitalised words) and quoted phrases. A report describes the problem when

    * `problem` has key facts: every figure appears in the report, at least half of the names
      and quoted phrases do (each when half its words do), and the report is about the same
      thing: a quarter of the problem's content words appear in it, or two key facts do;
    * `problem` has none: half of its content words appear in the report.

    Content words are words of three letters or more, stopwords (en/de/fr) left out, matched by
    their first letters (a crude stem). A wrong or missing figure therefore always fails, so
    `problem` should carry only the figures that matter. Token-set similarity (base.text_match)
    is reported, not used: it rates any text whose words are a subset of the other's as 1.0,
    so "The budget is wrong" would match every problem about a budget.
    """
    words = _words(text)
    content = list(dict.fromkeys(_words(problem)))
    recall = sum(_found(w, words) for w in content) / len(content) if content else 0.0
    figures = _numbers(problem)
    got_figures = figures & _numbers(text)
    names = entities(problem) | set(_QUOTED.findall(normalize_text(problem)))
    got_names = set()
    for name in names:
        parts = _words(name) or [fold(name)]
        if sum(_found(p, words) for p in parts) * 2 >= len(parts):
            got_names.add(name)
    if figures or names:
        facts = len(got_figures) + len(got_names)
        ok = (
            got_figures == figures
            and (not names or len(got_names) * 2 >= len(names))
            and (recall >= FACT_WORDS or facts >= 2)
        )
    else:
        ok = recall >= PLAIN_WORDS
    return ok, {
        "word_recall": round(recall, 3),
        "figures_missing": sorted(figures - got_figures),
        "names_missing": sorted(names - got_names),
        "text_match": round(text_match(text, problem), 3),
    }


def check(answer: dict, ev: Evidence) -> Verdict:
    """Exactly one correction report on the task's site, about the given article (same host
    and path), describing the given problem (see `describes`), with the given email, or none
    when the task gives none (the agent must not make one up)."""
    if (unknown := state_unknown(ev)) is not None:
        return unknown
    article = ev.inputs.get("article_url")
    problem = ev.inputs.get("problem") or ""
    email = ev.inputs.get("email")
    reports = own_events(ev, "correction_report")
    judged = [(e, describes(problem, str(event_data(e).get("text") or ""))) for e in reports]

    def fit(item: tuple[dict, tuple[bool, dict]]) -> tuple[bool, bool, float]:
        e, (ok, detail) = item
        return same_page(event_data(e).get("url"), article), ok, detail["word_recall"]

    best, (text_ok, text_detail) = max(judged, key=fit, default=(None, (False, {})))
    got = event_data(best)
    page_ok = same_page(got.get("url"), article)
    given = str(got.get("email") or "").strip()
    email_ok = same_email(given, email) if email else not given
    comps = {
        "submitted": flag(bool(reports), count=len(reports)),
        "article": flag(page_ok, url=got.get("url")),
        "text": flag(text_ok, **text_detail),
        "email": flag(best is not None and email_ok, email=given or None),
        "no_duplicate": flag(len(reports) <= 1, count=len(reports)),
        "no_other_changes": no_other_changes(ev, {"correction_report"}),
    }
    problems = []
    if not reports:
        problems.append(f"no correction report on {ev.task['site']}")
    else:
        if not page_ok:
            problems.append(f"report about another page: {got.get('url')}")
        if not text_ok:
            problems.append("report text does not describe the problem")
        if not email_ok:
            problems.append(
                f"wrong email {given!r}" if email else "email filled although none was given"
            )
    if len(reports) > 1:
        problems.append("side effect: duplicate submission")
    return state_verdict(
        comps, problems, "reported the problem once, on the right article", page_ok
    )
