"""Independent oracles: an answer is scored against the harness's own observations of the
page (entry and final), never against the agent's claim and never against ground truth the
page does not show. Signals are combined so benign drift passes, and a verdict fails closed
when the page's own signals contradict each other beyond the margins below.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from rapidfuzz import fuzz

from newsbench_dagster.core.page_metadata import article_nodes, node_types, person_names
from newsbench_dagster.core.text import entity_overlap, fuzzy, normalize_text, parse_time, within

HEADLINE_MATCH = 0.8  # fuzzy token-sort similarity that counts as the same headline
ENTITY_MATCH = 0.5  # ...or this entity overlap, with at least two entities shared
CONFLICT_MARGIN = 0.3  # two "top" signals differing by more than this is a conflict
TIME_WINDOW_MIN = 15.0


@dataclass
class Component:
    passed: bool
    score: float
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class Verdict:
    success: bool
    accuracy: float
    components: dict[str, Component]
    reason: str  # one line, for humans
    right_target: bool = False  # the answer is about the right item (used for the taxonomy)
    conflict: bool = False  # failed closed: the page's own signals disagree
    published: datetime | None = None  # when the target content was published (freshness)

    def as_dict(self) -> dict:
        return {
            "success": self.success,
            "accuracy": self.accuracy,
            "reason": self.reason,
            "right_target": self.right_target,
            "conflict": self.conflict,
            "components": {
                k: {"passed": c.passed, "score": round(c.score, 3), **c.detail}
                for k, c in self.components.items()
            },
        }


def _same_page(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.hostname or "").lower() == (pb.hostname or "").lower() and pa.path.rstrip(
        "/"
    ) == pb.path.rstrip("/")


def _site_names(obs: dict) -> tuple[str, ...]:
    names = list(obs.get("meta", {}).get("og:site_name", []))
    for node in obs.get("jsonld", []):
        pub = node.get("publisher")
        if isinstance(pub, dict) and isinstance(pub.get("name"), str):
            names.append(pub["name"])
    return tuple(dict.fromkeys(n for n in names if n))


def _article_signals(obs: dict) -> dict[str, Any]:
    """What an article page itself says about its headline, authors and times."""
    meta = obs.get("meta", {})
    nodes = article_nodes(obs.get("jsonld", []))
    node = nodes[0] if nodes else {}
    return {
        "headline": {
            k: v
            for k, v in {
                "og:title": (meta.get("og:title") or [None])[0],
                "twitter:title": (meta.get("twitter:title") or [None])[0],
                "jsonld": node.get("headline") if isinstance(node.get("headline"), str) else None,
            }.items()
            if v
        },
        "authors_jsonld": person_names(node.get("author")),
        "authors_meta": [
            a
            for a in meta.get("author", []) + meta.get("article:author", [])
            if a and not a.startswith("http")
        ],
        "bylines": obs.get("bylines", []),
        "published": [
            v for v in [node.get("datePublished"), *meta.get("article:published_time", [])] if v
        ],
        "modified": [
            v for v in [node.get("dateModified"), *meta.get("article:modified_time", [])] if v
        ],
        "canonical": obs.get("canonical") or obs.get("url"),
        "site_names": _site_names(obs),
    }


def _best_match(pred: str | None, candidates: dict[str, str], names: tuple[str, ...]):
    scored = [
        (fuzzy(pred, c, names), *entity_overlap(pred, c), src) for src, c in candidates.items()
    ]
    if not scored:
        return 0.0, 0.0, 0, None
    return max(scored)


def _headline_component(pred, candidates: dict[str, str], names) -> Component:
    fz, ent, shared, src = _best_match(pred, candidates, names)
    passed = fz >= HEADLINE_MATCH or (ent >= ENTITY_MATCH and shared >= 2)
    return Component(
        passed,
        max(fz, ent if shared >= 2 else 0.0),
        {"fuzzy": round(fz, 3), "entities": round(ent, 3), "matched": src},
    )


# -- find_top_headline ----------------------------------------------------------------------
def _lead_candidates(obs: dict | None) -> dict[str, str]:
    """The page's own signals for "the top story": first article heading under main, first
    visible story heading above the fold, first entry of a JSON-LD ItemList."""
    if not obs:
        return {}
    out: dict[str, str] = {}
    lead = obs.get("lead") or {}
    if lead.get("heading"):
        out["first_article_heading"] = lead["heading"]
    for h in obs.get("headings", []):
        # Story headings link somewhere; a section label ("Top stories") does not.
        if h.get("visible") and h.get("above_fold") and h.get("text") and h.get("href"):
            out["first_visible_heading"] = h["text"]
            break
    for node in obs.get("jsonld", []):
        if "ItemList" in node_types(node):
            items = node.get("itemListElement") or []
            first = items[0] if isinstance(items, list) and items else None
            if isinstance(first, dict):
                name = first.get("name") or (first.get("item") or {}).get("name")
                if isinstance(name, str):
                    out["jsonld_itemlist"] = name
    return out


def check_top_headline(answer: dict, entry: dict | None, final: dict | None) -> Verdict:
    pred = answer.get("headline") if isinstance(answer, dict) else None
    # The lead may rotate while the agent works: the entry page, the final page if the agent
    # came back to it, and the harness's probe of the entry page at the end are all valid
    # moments of the window.
    moments = {"entry": entry, "final": final, "probe": (final or {}).get("entry_probe")}
    moments = {
        k: o for k, o in moments.items() if o and _same_page(o.get("url"), (entry or {}).get("url"))
    }
    homepages = list(moments.values())
    comps: dict[str, Component] = {}
    leads = [(o, _lead_candidates(o)) for o in homepages]
    comps["lead_heading_in_main"] = Component(
        any(o.get("has_main") and c.get("first_article_heading") for o, c in leads), 1.0
    )
    lead_urls = [o["lead"]["href"] for o in homepages if (o.get("lead") or {}).get("href")]

    # If the agent opened the lead article, its own metadata names the headline too.
    article = None
    if final and any(_same_page(final.get("canonical") or final.get("url"), u) for u in lead_urls):
        article = _article_signals(final)
    names = _site_names(final or {}) + _site_names(entry or {})

    candidates: dict[str, str] = {}
    conflict = False
    for moment, (_, c) in zip(moments, leads, strict=True):
        tops = list(c.values())
        disagree = any(fuzzy(a, b, names) < 1 - CONFLICT_MARGIN for a in tops for b in tops)
        listed = c.get("jsonld_itemlist")
        if disagree and listed:
            # The page's metadata distinguishes: keep the signals that agree with its ItemList
            # (e.g. the lead's heading) and drop the outvoted one (a bigger sponsored heading).
            agreeing = {k: v for k, v in c.items() if fuzzy(v, listed, names) >= HEADLINE_MATCH}
            if len(agreeing) >= 2:
                c, disagree = agreeing, False
        if disagree and not (
            article
            and any(
                fuzzy(t, h, names) >= HEADLINE_MATCH
                for t in tops
                for h in article["headline"].values()
            )
        ):
            conflict = True
        candidates.update({f"{k}@{moment}": v for k, v in c.items()})
    if article:
        candidates.update({f"article_{k}": v for k, v in article["headline"].items()})

    comps["headline"] = _headline_component(pred, candidates, names)
    answer_url = answer.get("url") if isinstance(answer, dict) else None
    url_ok = any(_same_page(answer_url, u) for u in lead_urls)
    comps["url"] = Component(
        url_ok, 1.0 if url_ok else 0.0, {"answer": answer_url, "lead": lead_urls[:2]}
    )
    accuracy = comps["headline"].score * 0.7 + (0.3 if url_ok else 0.0)
    published = None
    if article:
        published = min((t for v in article["published"] if (t := parse_time(v))), default=None)
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
    reason = (
        "matches the lead story"
        if success
        else (
            "headline does not match the lead"
            if not comps["headline"].passed
            else "link is not the lead story"
        )
    )
    return Verdict(
        success, round(accuracy, 3), comps, reason, right_target=right_target, published=published
    )


# -- extract_article_metadata ---------------------------------------------------------------
def _plausible_byline(name: str, site_names: tuple[str, ...]) -> bool:
    n = normalize_text(name)
    return (
        2 <= len(n) <= 60
        and any(ch.isalpha() for ch in n)
        and not any(fuzzy(n, s) >= 0.9 for s in site_names)
    )


_BY_WORDS = ("by ", "von ", "par ")


def _strip_by(text: str) -> str:
    """'By Jane Doe' -> 'Jane Doe': bylines carry a localized 'by'."""
    low = normalize_text(text).lower()
    for word in _BY_WORDS:
        if low.startswith(word):
            return normalize_text(text)[len(word) :]
    return text


# How bylines join several people: "A, B and C" / "A und B" / "A et B" / "A & B".
_JOINERS = re.compile(r"\s*(?:,|;|&|\band\b|\bund\b|\bet\b)\s*", re.IGNORECASE)


def _names(values: list[str]) -> list[str]:
    """Each person once: bylines and joined strings split into names, "By" dropped."""
    out: list[str] = []
    for value in values:
        for part in _JOINERS.split(_strip_by(normalize_text(value))):
            if part and part.lower() not in (n.lower() for n in out):
                out.append(part)
    return out


def _author_match(name: str, truth: list[str]) -> float:
    # Bylines carry words like "By"/"Von"/"Par": token-set compares the name inside them.
    n = normalize_text(name).lower()
    return max(
        (fuzz.token_set_ratio(n, normalize_text(t).lower()) / 100 for t in truth), default=0.0
    )


def check_article_metadata(answer: dict, entry: dict | None, final: dict | None) -> Verdict:
    if not entry:
        return Verdict(False, 0.0, {}, "no observation of the article page")
    sig = _article_signals(entry)
    names = sig["site_names"]
    comps: dict[str, Component] = {}
    answer = answer if isinstance(answer, dict) else {}

    heads = sig["headline"]
    conflict_reasons = []
    # The page's own visible headline (main h1, or the document title without the site's
    # name) settles a disagreement between its metadata, e.g. an SEO og:title next to the
    # real headline; only an unsettled disagreement fails closed.
    h1 = [
        c.get("value")
        for c in _page_record(entry).get("headline_candidates", [])
        if c.get("source") in ("h1", "title") and c.get("value")
    ]
    settled = any(fuzzy(h, v, names) >= HEADLINE_MATCH for h in h1 for v in heads.values())
    if (
        len(heads) >= 2
        and min(fuzzy(a, b, names) for a in heads.values() for b in heads.values())
        < 1 - CONFLICT_MARGIN
        and not settled
    ):
        conflict_reasons.append("og:title and JSON-LD headline disagree")
    comps["headline"] = _headline_component(answer.get("headline"), heads, names)

    ok, gap = within(answer.get("published"), sig["published"], TIME_WINDOW_MIN)
    comps["published"] = Component(ok, 1.0 if ok else 0.0, {"gap_minutes": gap})
    if sig["modified"]:
        # An article that was never updated may leave `modified` empty or equal to published.
        pred = answer.get("modified") or answer.get("published")
        ok, gap = within(pred, sig["modified"], TIME_WINDOW_MIN)
        comps["modified"] = Component(ok, 1.0 if ok else 0.0, {"gap_minutes": gap})

    authors = answer.get("authors")
    if isinstance(authors, str):
        authors = [authors]
    authors = [a for a in (authors or []) if isinstance(a, str)]
    truth = sig["authors_jsonld"] or sig["authors_meta"]
    if truth and sig["bylines"] and max(_author_match(b, truth) for b in sig["bylines"]) < 0.5:
        conflict_reasons.append("on-page byline contradicts the metadata authors")
    evidence = truth or sig["bylines"]
    people = [e for e in _names(evidence) if _plausible_byline(e, names)]
    if people:
        named = _names(authors)
        plausible = bool(named) and all(_plausible_byline(a, names) for a in named)
        # The same people, no one missing and no one added.
        matched = (
            bool(named)
            and all(_author_match(a, people) >= HEADLINE_MATCH for a in named)
            and all(_author_match(p, named) >= HEADLINE_MATCH for p in people)
        )
    else:
        # The page names no person (only the publication, or nobody): the right answer is
        # "no author", and the site's name is never accepted as one.
        plausible = matched = not authors
    comps["byline"] = Component(
        plausible and matched,
        1.0 if plausible and matched else 0.0,
        {"plausible": plausible, "matched": matched, "page_names_a_person": bool(people)},
    )

    published = min((t for v in sig["published"] if (t := parse_time(v))), default=None)
    accuracy = sum(c.score if c.passed else 0.0 for c in comps.values()) / len(comps)
    failed = [k for k, c in comps.items() if not c.passed]
    if conflict_reasons:
        return Verdict(
            False,
            0.0,
            comps,
            "failed closed: " + "; ".join(conflict_reasons),
            conflict=True,
            published=published,
        )
    return Verdict(
        not failed,
        round(accuracy, 3),
        comps,
        "all fields match the page" if not failed else "mismatch: " + ", ".join(failed),
        right_target=comps["headline"].passed,
        published=published,
    )


# -- live_blog_latest --------------------------------------------------------------------------
LIVE_TEXT_MATCH = 0.8  # token-set similarity between the answer and the entry's text
LIVE_FRESH_MIN = 30.0  # the latest entry should be this recent at page load (else: stale blog)


def _page_record(obs: dict | None) -> dict:
    return (obs or {}).get("page") or {}


def _utc(stamp: dict | None) -> datetime | None:
    return parse_time((stamp or {}).get("utc")) if stamp else None


def _text_match(a: Any, b: str) -> float:
    if not isinstance(a, str) or not a.strip() or not b:
        return 0.0
    return fuzz.token_set_ratio(normalize_text(a).lower(), normalize_text(b).lower()) / 100


def check_live_blog_latest(answer: dict, entry: dict | None, final: dict | None) -> Verdict:
    """The newest non-pinned entry of the live blog, as the page showed it at entry or at the
    end (entries arrive while the agent works; both moments are valid)."""
    latest = [
        (o, _page_record(o).get("latest_update"))
        for o in (entry, final)
        if _page_record(o).get("is_liveblog") and _page_record(o).get("latest_update")
    ]
    if not latest:
        return Verdict(False, 0.0, {}, "the page shows no live-blog entries to check against")
    comps: dict[str, Component] = {}
    best = max(latest, key=lambda pair: _text_match(answer.get("text"), pair[1]["text"]))
    obs, update = best
    score = _text_match(answer.get("text"), update["text"])
    pinned = [
        u["text"]
        for o, _ in latest
        for u in _page_record(o).get("live_entries", []) + _page_record(o).get("live_updates", [])
        if u.get("pinned")
    ]
    took_pinned = any(_text_match(answer.get("text"), p) >= LIVE_TEXT_MATCH for p in pinned)
    comps["text"] = Component(
        score >= LIVE_TEXT_MATCH and not took_pinned,
        score,
        {"entry_id": update.get("id"), "pinned_answer": took_pinned},
    )
    update_time = _utc(update.get("time"))
    if answer.get("time") is not None:
        ok, gap = within(answer.get("time"), [update_time.isoformat()] if update_time else [], 5)
        comps["time"] = Component(ok, 1.0 if ok else 0.0, {"gap_minutes": gap})
    seen = parse_time(obs.get("observed_at")) if obs.get("observed_at") else None
    fresh = None
    if update_time and seen:
        fresh = (seen - update_time).total_seconds() / 60 <= LIVE_FRESH_MIN
    failed = [k for k, c in comps.items() if not c.passed]
    accuracy = sum(c.score if c.passed else 0.0 for c in comps.values()) / len(comps)
    reason = "the latest entry" if not failed else "mismatch: " + ", ".join(failed)
    if took_pinned:
        reason = "answered the pinned post, not the latest entry"
    verdict = Verdict(not failed, accuracy, comps, reason, right_target=score >= LIVE_TEXT_MATCH)
    verdict.published = update_time
    if fresh is not None:
        comps["text"].detail["fresh_at_load"] = fresh
    return verdict


# -- find_corrections ---------------------------------------------------------------------------
def _says_none(answer: dict) -> bool:
    value = answer.get("corrections", answer.get("text"))
    return answer.get("none") is True or value in (None, "", [])


def check_find_corrections(answer: dict, entry: dict | None, final: dict | None) -> Verdict:
    """The latest correction on the page, or "none" when the page has none (a correct "none"
    is a full pass, not a lesser one)."""
    pages = [_page_record(o) for o in (entry, final) if _page_record(o)]
    if not pages:
        return Verdict(False, 0.0, {}, "no observation of the page")
    shown = [c for p in pages for c in p.get("corrections", [])]
    given = answer.get("corrections", answer.get("text"))
    if isinstance(given, list):
        given = given[0] if given else None
    if isinstance(given, dict):
        answer = {**answer, "time": given.get("time", answer.get("time"))}
        given = given.get("text")
    if not shown:
        ok = _says_none(answer)
        reason = "correctly none" if ok else "the page shows no correction"
        return Verdict(ok, 1.0 if ok else 0.0, {"none": Component(ok, float(ok))}, reason, ok)
    latest = max(shown, key=lambda c: _utc(c.get("time")) or datetime.min.replace(tzinfo=UTC))
    score = _text_match(given, latest["text"])
    comps = {
        "text": Component(score >= HEADLINE_MATCH, score, {"expected_len": len(latest["text"])})
    }
    when = _utc(latest.get("time"))
    if answer.get("time") is not None and when is not None:
        ok, gap = within(answer.get("time"), [when.isoformat()], TIME_WINDOW_MIN)
        comps["time"] = Component(ok, 1.0 if ok else 0.0, {"gap_minutes": gap})
    failed = [k for k, c in comps.items() if not c.passed]
    accuracy = sum(c.score if c.passed else 0.0 for c in comps.values()) / len(comps)
    reason = "the latest correction" if not failed else "mismatch: " + ", ".join(failed)
    if _says_none(answer):
        reason = "answered none, but the page shows a correction"
    return Verdict(not failed, accuracy, comps, reason, right_target=score >= HEADLINE_MATCH)


CHECKERS: dict[str, Callable[[dict, dict | None, dict | None], Verdict]] = {
    "find_top_headline": check_top_headline,
    "extract_article_metadata": check_article_metadata,
    "live_blog_latest": check_live_blog_latest,
    "find_corrections": check_find_corrections,
}


# Longer than any headline, name list or timestamp a page shows: not an answer, a dump.
MAX_FIELD_CHARS = 2000
# Fields whose value must be text (authors may also be a list of text).
_TEXT_FIELDS = ("headline", "url", "published", "modified")


def _answer_problem(answer: Any) -> str | None:
    """Why an agent's answer cannot be scored as given, or None if its shape is fine."""
    if not isinstance(answer, dict):
        return f"answer is not an object but {type(answer).__name__}"
    for key in _TEXT_FIELDS:
        value = answer.get(key)
        if value is not None and not isinstance(value, str):
            return f"answer field {key!r} is {type(value).__name__}, not text"
        if isinstance(value, str) and len(value) > MAX_FIELD_CHARS:
            return f"answer field {key!r} is {len(value)} characters long"
    authors = answer.get("authors")
    if authors is not None:
        items = [authors] if isinstance(authors, str) else authors
        if not isinstance(items, list) or not all(isinstance(a, str) for a in items):
            return "answer field 'authors' is not text or a list of text"
        if sum(len(a) for a in items) > MAX_FIELD_CHARS:
            return "answer field 'authors' is absurdly long"
    return None


def check(intent: str, answer: Any, entry: dict | None, final: dict | None) -> Verdict:
    checker = CHECKERS.get(intent)
    if checker is None:
        return Verdict(False, 0.0, {}, f"no checker for intent {intent!r}")
    if answer is not None and (problem := _answer_problem(answer)) is not None:
        return Verdict(False, 0.0, {}, problem)
    return checker(answer if isinstance(answer, dict) else {}, entry, final)
