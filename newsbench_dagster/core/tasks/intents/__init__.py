"""Task producers, one module per intent.

Adding an intent is one file in this package that defines `INTENT = Intent(...)` (how a person
asks, the answer's form, what the oracle reads; for a state intent the changes allowed and its
checklist) and `BUILDS = ((step, builder), ...)`, plus the intent's entry in the task schema
and its checker, `core/scoring/checkers/<intent>.py` (that registry refuses to import without
both). The registry below finds it; `core.tasks.produce` runs it.

`Intent.kind` and `Intent.rank` fix where it is listed in READ_INTENTS / STATE_INTENTS (other
code depends on that order); builder steps fix the order of the tasks made.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from newsbench_dagster.core.tasks.intents.base import (
    ARTICLES_PER_SITE,
    FORBIDDEN_EVENTS,
    Builder,
    Context,
    Intent,
)

__all__ = [
    "ALLOWED_CHANGES",
    "ALL_INTENTS",
    "ANSWER_FORMATS",
    "ARTICLES_PER_SITE",
    "BUILDERS",
    "CHECKS",
    "FORBIDDEN_EVENTS",
    "INTENTS",
    "ORACLE_KINDS",
    "PROMPTS",
    "READ_INTENTS",
    "STATE_CONTRACTS",
    "STATE_INTENTS",
    "Context",
    "Intent",
    "intents",
    "unknown_intents",
]

_NOT_INTENTS = {"base"}
_KINDS = ("read", "state")


@cache
def intents() -> tuple[dict[str, Intent], list[tuple[int, str, Builder]]]:
    """intent name -> Intent, in listing order (read intents, then state intents, each by
    rank), and every (step, intent, builder) in step order, from every module of this
    package."""
    found: dict[str, Intent] = {}
    builders: list[tuple[int, str, Builder]] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name in _NOT_INTENTS or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        intent = getattr(module, "INTENT", None)
        if intent is None:
            continue
        if intent.name in found:
            raise RuntimeError(f"two producers for intent {intent.name!r} ({info.name})")
        if intent.kind not in _KINDS:
            raise RuntimeError(f"intent {intent.name!r} has unknown kind {intent.kind!r}")
        found[intent.name] = intent
        builders += [(step, intent.name, fn) for step, fn in getattr(module, "BUILDS", ())]
    for kind in _KINDS:
        ranks = [i.rank for i in found.values() if i.kind == kind]
        if len(set(ranks)) != len(ranks):
            raise RuntimeError(f"two {kind} intents share a rank: {sorted(ranks)}")
    steps = [step for step, _, _ in builders]
    if len(set(steps)) != len(steps):
        raise RuntimeError(f"two builders share a step: {sorted(steps)}")
    ordered = sorted(found.values(), key=lambda i: (_KINDS.index(i.kind), i.rank))
    return {i.name: i for i in ordered}, sorted(builders, key=lambda b: b[0])


INTENTS, BUILDERS = intents()

# The intents a person asks about a news site without changing anything on it.
READ_INTENTS = tuple(name for name, i in INTENTS.items() if i.kind == "read")
# The intents that change something on the site; their oracle reads the server's state.
STATE_INTENTS = tuple(name for name, i in INTENTS.items() if i.kind == "state")
ALL_INTENTS = READ_INTENTS + STATE_INTENTS


def unknown_intents(names) -> str | None:
    """What is wrong with `names` as intents, naming the unknown ones; None when all exist."""
    if bad := [n for n in names if n not in INTENTS]:
        return f"unknown intent(s) {', '.join(bad)}; known: {', '.join(ALL_INTENTS)}"
    return None


# How a person would ask, in the site's language. Agents see the prompt; never the checks.
PROMPTS = {name: i.prompts for name, i in INTENTS.items()}
# What each intent's oracle reads: metadata, the DOM the harness observed, server-side state.
ORACLE_KINDS = {name: i.oracle_kind for name, i in INTENTS.items()}
# The answer each intent's oracle reads: field -> what it holds. Part of the task agents see.
ANSWER_FORMATS = {name: i.answer_format for name, i in INTENTS.items()}
# The check labels a task carries (blind: the prompt never names them).
CHECKS = {name: i.checks for name, i in INTENTS.items()}
# The state intents' checklist: where the world starts, what must hold at the end, the step
# that needs a person; and the server-side changes each asks for (any other change fails).
STATE_CONTRACTS = {name: i.contract for name, i in INTENTS.items() if i.kind == "state"}
ALLOWED_CHANGES = {name: i.allowed_changes for name, i in INTENTS.items() if i.kind == "state"}
