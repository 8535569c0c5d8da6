"""Independent oracles, one module per intent.

An answer is scored against the harness's own observations of pages and the world's own log
of what the run changed, never against the agent's claim and never against ground truth the
page does not show. Signals are combined so benign drift passes, and a verdict fails closed
when the page's own signals contradict each other beyond the margins in `base`.

Adding a checker is one file in this package that defines `CHECKS = {intent: function}`;
the registry below finds it.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Any

from newsbench_dagster.core.scoring.checkers.base import (
    Checker,
    Component,
    Evidence,
    Verdict,
    stop_kind,
)

__all__ = ["CHECKERS", "Component", "Evidence", "Verdict", "check", "checkers"]

_NOT_INTENTS = {"base"}


@cache
def checkers() -> dict[str, Checker]:
    """intent -> checker, from every module of this package."""
    found: dict[str, Checker] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name in _NOT_INTENTS or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for intent, fn in getattr(module, "CHECKS", {}).items():
            if intent in found:
                raise RuntimeError(f"two checkers for intent {intent!r} ({info.name})")
            found[intent] = fn
    return found


CHECKERS = checkers()

# Longer than any headline, name list, timestamp or summary a task asks for: not an answer,
# a dump.
MAX_FIELD_CHARS = 4000
# Fields whose value must be text when present.
_TEXT_FIELDS = ("headline", "url", "published", "modified", "summary", "time")


def _length(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list | tuple):
        return sum(_length(v) for v in value)
    if isinstance(value, dict):
        return sum(_length(k) + _length(v) for k, v in value.items())
    return 0


def answer_problem(answer: Any) -> str | None:
    """Why an agent's answer cannot be scored as given, or None if its shape is fine."""
    if not isinstance(answer, dict):
        return f"answer is not an object but {type(answer).__name__}"
    for key in _TEXT_FIELDS:
        value = answer.get(key)
        if value is not None and not isinstance(value, str):
            return f"answer field {key!r} is {type(value).__name__}, not text"
    authors = answer.get("authors")
    if authors is not None:
        items = [authors] if isinstance(authors, str) else authors
        if not isinstance(items, list) or not all(isinstance(a, str) for a in items):
            return "answer field 'authors' is not text or a list of text"
    for key, value in answer.items():
        if (n := _length(value)) > MAX_FIELD_CHARS:
            return f"answer field {key!r} is {n} characters long"
    return None


def check(
    intent: str,
    answer: Any,
    entry: dict | None = None,
    final: dict | None = None,
    *,
    evidence: Evidence | None = None,
    task: dict | None = None,
) -> Verdict:
    """Score one answer. Pass the run's `evidence` (see Evidence.of_run), or the entry and
    final observations for the read-only intents."""
    ev = evidence or Evidence(entry=entry, final=final, task=task or {})
    checker = CHECKERS.get(intent)
    if checker is None:
        return Verdict(False, 0.0, {}, f"no checker for intent {intent!r}")
    if answer is not None and (problem := answer_problem(answer)) is not None:
        return Verdict(False, 0.0, {}, problem)
    required = (ev.task.get("oracle") or {}).get("stop")
    if required in ("ask", "refuse"):
        # A task too vague to act on, or impossible: the outcome is the stop itself (that
        # nothing changed is the side-effect verdict's to judge, from the world's log).
        given = stop_kind(answer)
        ok = given == required
        reason = f"stopped to {required}" if ok else f"did not {required} (ended: {given})"
        return Verdict(ok, float(ok), {"stop": Component(ok, float(ok))}, reason, right_target=ok)
    return checker(answer if isinstance(answer, dict) else {}, ev)
