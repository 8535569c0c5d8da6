"""Error clustering: runs that failed the same way, grouped by failure class and a normalised
message signature (numbers, ids, URLs, quoted strings and paths replaced by placeholders), the
largest clusters first, with a few examples each. "12 runs: navigation_timeout — Timeout <N>ms
exceeded waiting for <URL>" reads better than 12 rows of near-identical messages."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from newsbench_dagster.core.scoring.failures import SUCCESS

# Order matters: URLs before paths before numbers, so a URL is one placeholder, not several.
_RULES = [
    (re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I), "<URL>"),
    (re.compile(r"(?<![\w<])/(?:[\w.-]+/)+[\w.-]*"), "<PATH>"),
    (re.compile(r"\b[0-9a-f]{8,}\b|\br-[0-9a-f]{6,}\b", re.I), "<ID>"),
    (re.compile(r"\"[^\"]*\"|'[^']*'"), "<STR>"),
    (re.compile(r"(?<![A-Za-z_<])\d+(?:\.\d+)?"), "<N>"),  # 30000ms -> <N>ms; h2 stays
    (re.compile(r"\s+"), " "),
]
MAX_SIGNATURE = 160


def signature(message: str | None) -> str:
    """A message with its variable parts replaced, first line only, so runs that failed the
    same way share it."""
    if not message:
        return "(no message)"
    text = message.strip().splitlines()[0] if message.strip() else ""
    for pattern, placeholder in _RULES:
        text = pattern.sub(placeholder, text)
    text = text.strip()
    return (text[: MAX_SIGNATURE - 1] + "…") if len(text) > MAX_SIGNATURE else text or "(empty)"


@dataclass
class Cluster:
    failure_class: str
    kind: str  # agent | environment | void
    signature: str
    run_ids: list[str] = field(default_factory=list)
    examples: list[dict] = field(default_factory=list)  # a few (run_id, site, intent, message)

    @property
    def size(self) -> int:
        return len(self.run_ids)


def message_of(score: dict, run: dict | None) -> str | None:
    """What went wrong in one line's worth: the run's own error, else the checker's reason."""
    run = run or {}
    checker = score.get("checker") or {}
    return run.get("error") or checker.get("scorer_error") or checker.get("reason")


def cluster(
    scores: Iterable[dict], runs: dict[str, dict], kind_of, examples: int = 3
) -> list[Cluster]:
    """Every run that did not succeed, grouped by (failure class, signature); `runs` maps
    run_id to its agent_runs row, `kind_of` names whose fault a class is."""
    groups: dict[tuple[str, str], Cluster] = {}
    for s in scores:
        cls = s.get("failure_class") or "?"
        if cls == SUCCESS:
            continue
        message = message_of(s, runs.get(s["run_id"]))
        key = (cls, signature(message))
        c = groups.setdefault(key, Cluster(cls, kind_of(cls), key[1]))
        c.run_ids.append(s["run_id"])
        if len(c.examples) < examples:
            c.examples.append(
                {
                    "run_id": s["run_id"],
                    "site": s.get("site"),
                    "intent": s.get("intent"),
                    "agent": s.get("agent_version"),
                    "message": message or "",
                }
            )
    return sorted(groups.values(), key=lambda c: (-c.size, c.failure_class, c.signature))
