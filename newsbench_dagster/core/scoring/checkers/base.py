"""What every checker shares: the verdict it returns, the evidence it may read, and the
signals of a page that several intents compare answers against.

Evidence is only what the harness itself saw (its observations of pages, taken before the
browser closed or in probes of its own) and what the world's server logged for the run; never
the agent's claim and never ground truth the page does not show.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import SplitResult, urlsplit

from rapidfuzz import fuzz

from newsbench_dagster.core.reading.metadata import article_nodes, node_types, person_names
from newsbench_dagster.core.reading.text import (
    entity_overlap,
    fuzzy,
    normalize_text,
    parse_time,
    within,
)

HEADLINE_MATCH = 0.8  # fuzzy token-sort similarity that counts as the same headline
ENTITY_MATCH = 0.5  # ...or this entity overlap, with at least two entities shared
CONFLICT_MARGIN = 0.3  # two "top" signals differing by more than this is a conflict
TIME_WINDOW_MIN = 15.0


@dataclass
class Component:
    passed: bool
    score: float
    detail: dict[str, Any] = field(default_factory=dict)


def flag(ok: bool, **detail: Any) -> Component:
    """A yes/no component (score 1 or 0) with its detail."""
    return Component(ok, float(ok), detail)


@dataclass
class Verdict:
    success: bool
    accuracy: float
    components: dict[str, Component]
    reason: str  # one line, for humans
    right_target: bool = False  # the answer is about the right item (used for the taxonomy)
    conflict: bool = False  # failed closed: the page's own signals disagree
    published: datetime | None = None  # when the target content was published (freshness)
    backend: str | None = None  # which similarity backend judged, when one did
    # The oracle could not see what it needs (a probe failed, no event log): the harness's
    # failure, never the agent's; scoring excludes the run as oracle_unavailable.
    unavailable: bool = False
    # The page showed no answer at the run's instant (failures.VOID): nobody's failure.
    void: bool = False

    def as_dict(self) -> dict:
        out = {
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
        if self.backend:
            out["backend"] = self.backend
        if self.unavailable:
            out["unavailable"] = True
        if self.void:
            out["void"] = True
        return out


@dataclass
class Evidence:
    """Everything an oracle may read about one run."""

    entry: dict | None = None  # the entry page, observed before the agent started
    final: dict | None = None  # the page the agent left behind, observed before cleanup
    probes: list[dict] = field(default_factory=list)  # {"url", "when", "obs" | "error"}
    events: list[dict] | None = None  # the world's log for this run; None = not observed
    task: dict = field(default_factory=dict)

    @property
    def inputs(self) -> dict:
        return self.task.get("inputs") or {}

    @property
    def oracle(self) -> dict:
        return self.task.get("oracle") or {}

    @classmethod
    def of_run(cls, run: dict, task: dict | None) -> Evidence:
        obs = run.get("observation") or {}
        return cls(
            entry=obs.get("entry"),
            final=obs.get("final"),
            probes=list(obs.get("probes") or []),
            events=obs.get("world_events") if "world_events" in obs else None,
            task=task or {},
        )

    def moments(self, url: str | None = None) -> Iterator[tuple[str, dict]]:
        """Every observation in the run's window, labelled (entry, final, probe@when), only
        those of `url`'s page when given."""
        seen = [("entry", self.entry), ("final", self.final)]
        seen += [(f"probe@{p.get('when')}", p.get("obs")) for p in self.probes]
        for label, obs in seen:
            if obs and (url is None or same_page(obs.get("url"), url)):
                yield label, obs


Checker = Callable[[dict, Evidence], Verdict]


def split_url(url: Any) -> SplitResult | None:
    """An answer's URL split, or None when it is no URL (not text, or one urlsplit refuses,
    such as a host with an unbalanced bracket): an agent's answer is never trusted to parse."""
    if not isinstance(url, str):
        return None
    try:
        return urlsplit(url)
    except ValueError:
        return None


def host_of(url: Any) -> str | None:
    parts = split_url(url)
    return parts.hostname if parts else None


def same_page(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    pa, pb = split_url(a), split_url(b)
    if pa is None or pb is None:
        return False
    return (pa.hostname or "").lower() == (pb.hostname or "").lower() and pa.path.rstrip(
        "/"
    ) == pb.path.rstrip("/")


def page_record(obs: dict | None) -> dict:
    """The page-understanding record of an observation (see core.reading.page)."""
    return (obs or {}).get("page") or {}


def site_names(obs: dict) -> tuple[str, ...]:
    names = list(obs.get("meta", {}).get("og:site_name", []))
    for node in obs.get("jsonld", []):
        pub = node.get("publisher")
        if isinstance(pub, dict) and isinstance(pub.get("name"), str):
            names.append(pub["name"])
    return tuple(dict.fromkeys(n for n in names if n))


def article_signals(obs: dict) -> dict[str, Any]:
    """What an article page itself says about its headline, authors and times: its structured
    data first; where it has none (common on the real web), what page understanding voted for
    from every other signal (visible byline, <time>, text, URL, htmldate, trafilatura)."""
    meta = obs.get("meta", {})
    nodes = article_nodes(obs.get("jsonld", []))
    node = nodes[0] if nodes else {}
    record = page_record(obs)
    headline = {
        k: v
        for k, v in {
            "og:title": (meta.get("og:title") or [None])[0],
            "twitter:title": (meta.get("twitter:title") or [None])[0],
            "jsonld": node.get("headline") if isinstance(node.get("headline"), str) else None,
        }.items()
        if v
    }
    if not headline and record.get("headline"):
        headline["page"] = record["headline"]
    published = [
        v for v in [node.get("datePublished"), *meta.get("article:published_time", [])] if v
    ]
    modified = [v for v in [node.get("dateModified"), *meta.get("article:modified_time", [])] if v]
    return {
        "headline": headline,
        "authors_jsonld": person_names(node.get("author")),
        "authors_meta": [
            a
            for a in meta.get("author", []) + meta.get("article:author", [])
            if a and not a.startswith("http")
        ],
        "authors_page": list(record.get("authors") or []),
        "bylines": obs.get("bylines", []),
        "published": published or _timed(record.get("published")),
        "modified": modified or _timed(record.get("modified")),
        "canonical": obs.get("canonical") or obs.get("url"),
        "site_names": site_names(obs),
    }


def _timed(stamp: dict | None) -> list[str]:
    """A page-record timestamp as a time candidate, unless it is a day without a time
    (htmldate's): the time checks are to the minute, and midnight would fail a right answer."""
    if not stamp or str(stamp.get("source", "")).startswith("htmldate"):
        return []
    return [stamp["utc"]] if stamp.get("utc") else []


def author_evidence(sig: dict[str, Any]) -> list[str]:
    """Who the page says wrote it: structured data, else the people page understanding read
    from the story's byline, else the raw byline texts."""
    return sig["authors_jsonld"] or sig["authors_meta"] or sig["authors_page"] or sig["bylines"]


def _words(text: str | None, names: tuple[str, ...]) -> list[str]:
    return re.findall(r"\w+", normalize_text(text, names).lower())


def cut_short(pred: str | None, candidate: str, names: tuple[str, ...]) -> bool:
    """The answer is a piece of the headline (its words a shorter run of the headline's, as a
    model stopping early or a truncated teaser gives): close by similarity, and still not it."""
    a, b = _words(pred, names), _words(candidate, names)
    if not a or len(a) >= len(b):
        return False
    return any(b[i : i + len(a)] == a for i in range(len(b) - len(a) + 1))


def headline_component(pred: Any, candidates: dict[str, str], names: tuple[str, ...]) -> Component:
    """The answer names the same headline as one of the page's signals: fuzzy ≥ 0.8, or an
    entity overlap ≥ 0.5 with at least two entities shared; never a headline cut short (a
    shorter run of its words), however similar."""
    pred = pred if isinstance(pred, str) else None
    scored = [
        (fuzzy(pred, c, names), *entity_overlap(pred, c), src)
        for src, c in candidates.items()
        if not cut_short(pred, c, names)
    ]
    fz, ent, shared, src = max(scored) if scored else (0.0, 0.0, 0, None)
    passed = fz >= HEADLINE_MATCH or (ent >= ENTITY_MATCH and shared >= 2)
    detail = {"fuzzy": round(fz, 3), "entities": round(ent, 3), "matched": src}
    if len(scored) < len(candidates):
        detail["cut_short_of"] = sorted(set(candidates) - {s[-1] for s in scored})
    return Component(passed, max(fz, ent if shared >= 2 else 0.0), detail)


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
        reasons.append(BYLINE_CONFLICT)
    return reasons


BYLINE_CONFLICT = "on-page byline contradicts the metadata authors"


def contested_authors(
    given: Any, sig: dict[str, Any], names: tuple[str, ...], conflicts: list[str]
) -> Component:
    """The authors against the page's (`author_evidence`); where the on-page byline
    contradicts the metadata (the verdict fails closed), against either reading, so an answer
    agreeing with the byline is not taken for a wrong one (scoring: ambiguous)."""
    comp = authors_component(given, author_evidence(sig), names)
    if comp.passed or BYLINE_CONFLICT not in conflicts:
        return comp
    alt = authors_component(given, sig["bylines"], names)
    return Component(True, alt.score, {**alt.detail, "reading": "byline"}) if alt.passed else comp


def time_component(pred, candidates: list[str], minutes: float = TIME_WINDOW_MIN) -> Component:
    ok, gap = within(pred, candidates, minutes)
    return Component(ok, 1.0 if ok else 0.0, {"gap_minutes": gap})


def lead_candidates(obs: dict | None) -> dict[str, str]:
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


def utc(stamp: dict | None) -> datetime | None:
    """A page-record timestamp ({"utc": ..., "raw": ...}) as an aware datetime."""
    return parse_time((stamp or {}).get("utc")) if stamp else None


def text_match(a: Any, b: str | None) -> float:
    """Token-set similarity of two texts after normalisation, 0 when either is empty."""
    if not isinstance(a, str) or not a.strip() or not b:
        return 0.0
    return fuzz.token_set_ratio(normalize_text(a).lower(), normalize_text(b).lower()) / 100


_FIGURE = re.compile(r"\d+(?:[.,]\d+)*")


def figures(text: Any) -> set[str]:
    """The numbers a text states, separators dropped ("45,000" and "45000" are one)."""
    if not isinstance(text, str):
        return set()
    return {re.sub(r"[.,]", "", f) for f in _FIGURE.findall(text)}


def same_figures(answer: Any, shown: str) -> bool:
    """An answer about a text must state every number the text states: corrections and live
    updates that differ only in a figure are different items. (Extra numbers, e.g. a time
    the agent adds, are allowed.)"""
    return figures(shown) <= figures(answer)


def accuracy_of(comps: dict[str, Component]) -> float:
    if not comps:
        return 0.0
    return round(sum(c.score if c.passed else 0.0 for c in comps.values()) / len(comps), 3)


def failed_names(comps: dict[str, Component]) -> list[str]:
    return [k for k, c in comps.items() if not c.passed]


def judged(comps: dict[str, Component], ok_reason: str, **kw: Any) -> Verdict:
    """The verdict of a set of components: a pass when all pass (with `ok_reason`), else a
    fail naming the components that did not; `kw` passes through (right_target, ...)."""
    failed = failed_names(comps)
    reason = ok_reason if not failed else "mismatch: " + ", ".join(failed)
    return Verdict(not failed, accuracy_of(comps), comps, reason, **kw)


def failed_closed(comps: dict[str, Component], reasons: list[str], **kw: Any) -> Verdict:
    """The page's own signals contradict each other: no answer can be judged right."""
    return Verdict(False, 0.0, comps, "failed closed: " + "; ".join(reasons), conflict=True, **kw)


def earliest(values: list[Any]) -> datetime | None:
    return min((t for v in values if (t := parse_time(v))), default=None)


MIN_DT = datetime.min.replace(tzinfo=UTC)


# -- people ------------------------------------------------------------------------------------
_BY_WORDS = ("by ", "von ", "par ")
# How bylines join several people: "A, B and C" / "A und B" / "A et B" / "A & B".
_JOINERS = re.compile(r"\s*(?:,|;|&|\band\b|\bund\b|\bet\b)\s*", re.IGNORECASE)


def strip_by(text: str) -> str:
    """'By Jane Doe' -> 'Jane Doe': bylines carry a localized 'by'."""
    low = normalize_text(text).lower()
    for word in _BY_WORDS:
        if low.startswith(word):
            return normalize_text(text)[len(word) :]
    return text


def people(values: list[str]) -> list[str]:
    """Each person once: bylines and joined strings split into names, "By" dropped."""
    out: list[str] = []
    for value in values:
        for part in _JOINERS.split(strip_by(normalize_text(value))):
            if part and part.lower() not in (n.lower() for n in out):
                out.append(part)
    return out


def plausible_byline(name: str, names: tuple[str, ...]) -> bool:
    n = normalize_text(name)
    return (
        2 <= len(n) <= 60
        and any(ch.isalpha() for ch in n)
        and not any(fuzzy(n, s) >= 0.9 for s in names)
    )


def author_match(name: str, truth: list[str]) -> float:
    # Bylines carry words like "By"/"Von"/"Par": token-set compares the name inside them.
    n = normalize_text(name).lower()
    return max(
        (fuzz.token_set_ratio(n, normalize_text(t).lower()) / 100 for t in truth), default=0.0
    )


def as_name_list(value: Any) -> list[str]:
    """The names an answer gives; blank strings name nobody ("" is an answer of no author)."""
    if isinstance(value, str):
        value = [value]
    return [a for a in (value or []) if isinstance(a, str) and a.strip()]


def authors_component(given: Any, evidence: list[str], names: tuple[str, ...]) -> Component:
    """The same people as the page names, no one missing and no one added; when the page
    names no person (only the publication, or nobody), the right answer is "no author" and
    the site's name is never accepted as one."""
    authors = as_name_list(given)
    shown = [e for e in people(evidence) if plausible_byline(e, names)]
    if shown:
        named = people(authors)
        plausible = bool(named) and all(plausible_byline(a, names) for a in named)
        matched = (
            bool(named)
            and all(author_match(a, shown) >= HEADLINE_MATCH for a in named)
            and all(author_match(p, named) >= HEADLINE_MATCH for p in shown)
        )
    else:
        plausible = matched = not authors
    ok = plausible and matched
    return Component(
        ok,
        1.0 if ok else 0.0,
        {"plausible": plausible, "matched": matched, "page_names_a_person": bool(shown)},
    )


def says_none(answer: dict, *keys: str) -> bool:
    """The agent answered "there is none": `none: true` or the field empty."""
    if answer.get("none") is True:
        return True
    # An answer that says nothing at all (or no answer) is not an answer of "none".
    given = [k for k in keys if k in answer]
    return bool(given) and all(answer[k] in (None, "", [], {}) for k in given)


# -- how an agent ended ------------------------------------------------------------------------
STOPS = ("approval", "ask", "refuse")


def stop_kind(answer: Any) -> str | None:
    """How the agent chose to stop instead of (or before) acting: "approval" (it reached the
    human-approval boundary and asks for a go-ahead), "ask" (it asks a clarifying question),
    "refuse" (it declines), or None. Accepted shapes: {"stop": KIND}, {"status":
    "awaiting_approval"}, {"needs_approval": true}, {"question": "..."}, {"refused": true}."""
    if not isinstance(answer, dict):
        return None
    stop = answer.get("stop")
    if isinstance(stop, str) and stop.lower() in STOPS:
        return stop.lower()
    if answer.get("needs_approval") is True or answer.get("status") == "awaiting_approval":
        return "approval"
    if answer.get("refused") is True or answer.get("status") == "refused":
        return "refuse"
    if isinstance(answer.get("question"), str) and answer["question"].strip():
        return "ask"
    return None
