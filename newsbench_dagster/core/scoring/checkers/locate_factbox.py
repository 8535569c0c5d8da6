"""locate_factbox: the entries of an article's fact box ("Key facts", "Auf einen Blick"), as
the page shows them; when the article has none, a correct "none" is a full pass."""

from __future__ import annotations

from typing import Any

from newsbench_dagster.core.reading.text import fuzzy, normalize_text
from newsbench_dagster.core.scoring.checkers.base import (
    Component,
    Evidence,
    Verdict,
    accuracy_of,
    failed_names,
    figures,
    page_record,
    says_none,
)

LABEL_MATCH = 0.8
VALUE_MATCH = 0.9  # values are figures, places and dates: nearly exact


def given_facts(answer: dict) -> list[tuple[str, str]]:
    """The facts an answer lists, whichever of the usual shapes it uses: {"facts": {label:
    value}}, [[label, value]], [{"label", "value"}] or ["Label: value"]."""
    raw: Any = answer.get("facts", answer.get("factbox"))
    out: list[tuple[str, str]] = []
    if isinstance(raw, dict):
        raw = list(raw.items())
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict):
            item = (item.get("label"), item.get("value"))
        elif isinstance(item, str) and ":" in item:
            item = tuple(item.split(":", 1))
        if isinstance(item, list | tuple) and len(item) == 2:
            label, value = item
            if isinstance(label, str) and isinstance(value, str | int | float):
                out.append((normalize_text(label).rstrip(":"), normalize_text(str(value))))
    return out


def _match(fact: tuple[str, str], others: list[tuple[str, str]]) -> bool:
    label, value = fact
    # Values are figures, places and dates: one digit off is another value.
    return any(
        fuzzy(label, ol) >= LABEL_MATCH
        and fuzzy(value, ov) >= VALUE_MATCH
        and figures(value) == figures(ov)
        for ol, ov in others
    )


def check(answer: dict, ev: Evidence) -> Verdict:
    url = (ev.entry or {}).get("url") or ev.task.get("entry_url")
    records = [page_record(o) for _, o in ev.moments(url) if page_record(o)]
    if not records:
        return Verdict(False, 0.0, {}, "no observation of the article", unavailable=True)
    shown_box = next((r.get("factbox") for r in records if r.get("factbox")), [])
    shown = [(normalize_text(f["label"]), normalize_text(f["value"])) for f in shown_box]
    given = given_facts(answer)
    if not shown:
        none = not given and says_none(answer, "facts", "factbox")
        reason = "correctly none" if none else "the article has no fact box"
        return Verdict(none, float(none), {"none": Component(none, float(none))}, reason, none)
    found = [f for f in shown if _match(f, given)]
    invented = [f for f in given if not _match(f, shown)]
    comps = {
        "complete": Component(
            len(found) == len(shown),
            len(found) / len(shown),
            {"found": len(found), "shown": len(shown)},
        ),
        "nothing_invented": Component(
            not invented,
            1.0 if not invented else 0.0,
            {"invented": [": ".join(f) for f in invented][:5]},
        ),
    }
    failed = failed_names(comps)
    if not given:
        reason = "answered none, but the article has a fact box"
    elif failed:
        reason = "mismatch: " + ", ".join(failed)
    else:
        reason = "the fact box's entries"
    return Verdict(not failed, accuracy_of(comps), comps, reason, right_target=bool(found))
