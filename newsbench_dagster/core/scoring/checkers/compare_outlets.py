"""compare_outlets: the lead story of two outlets at the same time, and whether they lead
with the same story. Each outlet's lead is judged like find_top_headline, against its front
page as the harness saw it in the run's window (the entry page for the first outlet, probes
before and after the agent for the second); "same story" is judged by comparing the leads."""

from __future__ import annotations

from typing import Any

from newsbench_dagster.core.reading.text import entity_overlap, fuzzy
from newsbench_dagster.core.scoring.checkers.base import (
    ENTITY_MATCH,
    HEADLINE_MATCH,
    Component,
    Evidence,
    Verdict,
    flag,
    host_of,
    judged,
    lead_candidates,
    same_page,
)
from newsbench_dagster.core.scoring.checkers.find_top_headline import check as check_top_headline


def _homes(ev: Evidence) -> list[str]:
    """The two front pages: the entry, then the other page the harness probes."""
    entry = ev.task.get("entry_url") or (ev.entry or {}).get("url")
    others = [
        p["url"]
        for p in (ev.oracle.get("probes") or [])
        if p.get("url", "").startswith("http") and not same_page(p["url"], entry)
    ]
    return [entry, *dict.fromkeys(others)][:2]


def _outlet_answers(answer: dict, homes: list[str], names: list[str]) -> list[dict | None]:
    """The answer's entry for each outlet: matched by the URL's host, else by the outlet's
    name, else by position."""
    given = answer.get("outlets")
    given = [g for g in given if isinstance(g, dict)] if isinstance(given, list) else []
    out: list[dict | None] = []
    for i, home in enumerate(homes):
        host = host_of(home)
        pick = next((g for g in given if host_of(str(g.get("url") or "")) == host), None)
        if pick is None and i < len(names):
            pick = next(
                (
                    g
                    for g in given
                    if fuzzy(str(g.get("site") or g.get("name") or ""), names[i]) >= HEADLINE_MATCH
                ),
                None,
            )
        if pick is None and len(given) == len(homes):
            pick = given[i]
        out.append(pick)
    return out


def _outlet_evidence(ev: Evidence, home: str) -> Evidence:
    """One outlet's window: its first observation as the entry, the later ones as probes;
    the agent's final page too, in case it is that outlet's lead article."""
    seen = [o for _, o in ev.moments(home)]
    probes = [{"url": home, "when": "window", "obs": o} for o in seen[1:]]
    return Evidence(entry=seen[0] if seen else None, final=ev.final, probes=probes, task=ev.task)


def _first_headings(ev: Evidence) -> list[str]:
    return [h for _, o in ev.moments() if (h := lead_candidates(o).get("first_article_heading"))]


def _same_story(a: str, b: str) -> bool:
    ent, shared = entity_overlap(a, b)
    return fuzzy(a, b) >= HEADLINE_MATCH or (ent >= ENTITY_MATCH and shared >= 2)


def check(answer: dict, ev: Evidence) -> Verdict:
    homes = _homes(ev)
    names = [n for n in (ev.inputs.get("outlets") or []) if isinstance(n, str)]
    if len(homes) < 2:
        return Verdict(False, 0.0, {}, "the task names fewer than two outlets", unavailable=True)
    comps: dict[str, Component] = {}
    leads: list[list[str]] = []
    for i, (home, given) in enumerate(
        zip(homes, _outlet_answers(answer, homes, names), strict=True)
    ):
        sub = _outlet_evidence(ev, home)
        if sub.entry is None:
            return Verdict(
                False, 0.0, {}, f"the harness could not observe {home}", unavailable=True
            )
        leads.append(_first_headings(Evidence(entry=sub.entry, probes=sub.probes)))
        verdict = check_top_headline(given or {}, sub)
        if verdict.conflict:
            return Verdict(
                False, 0.0, comps, f"failed closed on {home}: {verdict.reason}", conflict=True
            )
        comps[f"outlet_{i + 1}"] = Component(
            verdict.success,
            verdict.accuracy,
            {"home": home, "reason": verdict.reason if given else "outlet missing from the answer"},
        )
    claimed: Any = answer.get("same_story")
    if claimed is not None:
        same = any(_same_story(a, b) for a in leads[0] for b in leads[1])
        comps["same_story"] = flag(claimed is same, expected=same, given=claimed)
    return judged(
        comps,
        "both leads right",
        right_target=any(c.passed for k, c in comps.items() if k.startswith("outlet_")),
    )
