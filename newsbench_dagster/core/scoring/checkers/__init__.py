"""Independent oracles, one module per intent.

An answer is scored against the harness's own observations of pages and the world's own log
of what the run changed, never against the agent's claim and never against ground truth the
page does not show. Signals are combined so benign drift passes, and a verdict fails closed
when the page's own signals contradict each other beyond the margins in `base`.

Adding a checker is one file in this package named exactly as its intent (the intent's module
in `core.tasks.intents`), defining `check(answer, evidence) -> Verdict` and, when a page can
show no answer at all (a live blog before its first entry), `no_answer(evidence) -> str |
None`: why the page the run saw holds none, which voids the run instead of failing it. The
registry below
pairs every intent with its module and refuses to import when the two sets disagree (an intent
with no checker, a checker of no intent) or the task schema's intent enum disagrees with the
intents. Logic several checkers share lives in the modules of `SHARED`, which are no checkers.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from newsbench_dagster.core.scoring.checkers.base import (
    Checker,
    Component,
    Evidence,
    Verdict,
    says_none,
    stop_kind,
)
from newsbench_dagster.core.tasks.contract import task_schema
from newsbench_dagster.core.tasks.intents import INTENTS

__all__ = [
    "CHECKERS",
    "NO_ANSWER_RULES",
    "SHARED",
    "Component",
    "Evidence",
    "Verdict",
    "check",
    "checker_registry",
]

# The modules of this package that hold what several checkers share; every other module is
# the checker of the intent it is named after.
SHARED = frozenset({"base", "state_base"})


def checker_registry(
    intents: Iterable[str], schema_intents: Iterable[str], package: str = __name__
) -> dict[str, Checker]:
    """intent -> checker, in the order of `intents`: the `check` of `package`'s module named
    after each intent. Raises RuntimeError, naming the file, when an intent has no module or
    its module no `check`, when a module (outside SHARED) is named after no intent, and when
    `schema_intents` (the task schema's intent enum) is not the same set as `intents`."""
    intents = list(intents)
    schema_intents = set(schema_intents)
    if schema_intents != set(intents):
        raise RuntimeError(
            "the task schema's intent enum (core/tasks/schemas/task.schema.json) and the"
            " intents registry (core.tasks.intents) disagree:"
            f" only in the schema {sorted(schema_intents - set(intents))},"
            f" only in the registry {sorted(set(intents) - schema_intents)}"
        )
    folder = Path(importlib.import_module(package).__path__[0])
    modules = {
        info.name
        for info in pkgutil.iter_modules([str(folder)])
        if info.name not in SHARED and not info.name.startswith("_")
    }
    if strays := sorted(modules - set(intents)):
        files = ", ".join(str(folder / f"{name}.py") for name in strays)
        raise RuntimeError(f"checker modules named after no known intent: {files}")
    found: dict[str, Checker] = {}
    for intent in intents:
        file = folder / f"{intent}.py"
        if intent not in modules:
            raise RuntimeError(f"no checker for intent {intent!r}: {file} is missing")
        fn = getattr(importlib.import_module(f"{package}.{intent}"), "check", None)
        if not callable(fn):
            raise RuntimeError(f"checker {file} defines no check(answer, evidence)")
        found[intent] = fn
    return found


CHECKERS = checker_registry(INTENTS, task_schema()["properties"]["intent"]["enum"])
# intent -> its checker module's `no_answer`, for the intents that define one.
NO_ANSWER_RULES: dict[str, Callable[[Evidence], str | None]] = {
    intent: rule
    for intent, fn in CHECKERS.items()
    if callable(rule := getattr(sys.modules[fn.__module__], "no_answer", None))
}

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
    rule = NO_ANSWER_RULES.get(intent)
    if rule is not None and (empty := rule(ev)) is not None:
        return _no_answer(intent, answer, ev, empty)
    return checker(answer if isinstance(answer, dict) else {}, ev)


def _no_answer(intent: str, answer: Any, ev: Evidence, why: str) -> Verdict:
    """The page showed no answer: the run is void, unless the task's contract makes "there is
    none" the right ending (`oracle.when_no_answer: say_none`); then that passes and any
    invented answer fails."""
    if (ev.task.get("oracle") or {}).get("when_no_answer") != "say_none":
        return Verdict(False, 0.0, {}, why, void=True)
    fields = ev.task.get("answer_format") or INTENTS[intent].answer_format
    none = isinstance(answer, dict) and says_none(answer, *fields)
    reason = "correctly none: " + why if none else "invented an answer: " + why
    return Verdict(none, float(none), {"none": Component(none, float(none))}, reason, none)
