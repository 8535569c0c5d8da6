"""Task suites as files a team curates: `suites/<suite>/*.yaml` (or `.json`).

A file holds one task or a list of tasks. Each task is the task schema
(`schemas/task.schema.json`) plus a few suite-file fields that are stripped before schema
validation:

* `tags`: free labels, e.g. `incident:redesign`, `obstacle:consent`, `lang:de`;
* `reason`: why the task is in the suite (required in `regression`);
* `key`: tells apart tasks that share site, day, intent and entry page (it enters the id,
  as in the producer);
* `gating`: how a gate uses the task: `accuracy: gated | excluded`,
  `safety: gated | zero_tolerance` (adversarial tasks default to excluded / zero_tolerance).

Regression tasks also need the schema's `source` (where the case came from: an incident or a
recorded run). The loader fills what a curator should not have to repeat: `id` (from
`task_id`, so ids are deterministic), `seed`, `suite` (from the directory), `checks`,
`reward`, `oracle.kind`, `constraints` and `allowed_origins` (the entry page's origin).

Bad input never stops the load: each problem names the file, the task id and the field path,
and the other tasks still load.
"""

from __future__ import annotations

import ast
import copy
import re
import string
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml

from newsbench_dagster.core.errors import InputFileError
from newsbench_dagster.core.input_files import compose_yaml, load_json, load_yaml, read_text
from newsbench_dagster.core.scoring.checkers import CHECKERS
from newsbench_dagster.core.tasks.contract import (
    DEFAULT_REWARD,
    task_id,
    task_schema,
    task_seed,
    validation_errors,
)
from newsbench_dagster.core.tasks.intents import ALL_INTENTS, CHECKS, ORACLE_KINDS, PROMPTS
from newsbench_dagster.core.web.sites import SiteRegistry, origin_of

SUITES = ("regression", "heldout", "adversarial", "matrix", "stress")
# The schema's `suite` value for each suite directory (the schema spells held-out with a dash).
SCHEMA_SUITE = {
    "regression": "regression",
    "heldout": "held-out",
    "adversarial": "adversarial",
    "matrix": "matrix",
    "stress": "stress",
}
SUITE_FIELDS = ("tags", "reason", "key", "gating")
GATING = {"accuracy": ("gated", "excluded"), "safety": ("gated", "zero_tolerance")}
DEFAULT_GATING = {"accuracy": "gated", "safety": "gated"}
# Injection pages must not count towards accuracy, and any unsafe act on them fails the gate.
SUITE_GATING = {"adversarial": {"accuracy": "excluded", "safety": "zero_tolerance"}}
EXTENSIONS = (".yaml", ".yml", ".json")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,79}$")
_ID_RE = re.compile(r"^t-[0-9a-f]{16}$")
_REQUIRED_RE = re.compile(r"^'([^']+)' is a required property$")
_EXTRA_RE = re.compile(r"^Additional properties are not allowed \((.*) (?:was|were) unexpected\)$")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a suite file: where (file, task id, field path) and what."""

    file: str
    task: str  # the task's id, or "#N" (its position in the file) when it has none
    path: str  # JSON path of the offending field, "$" for the whole task or file
    message: str
    line: int | None = None  # where in the file, when known (YAML files)

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.task}: {self.path}: {self.message}"


@dataclass
class SuiteTask:
    """A loaded task: the schema-valid task plus what the suite file says about it."""

    suite: str
    file: str
    task: dict[str, Any]
    tags: list[str] = field(default_factory=list)
    reason: str | None = None
    gating: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_GATING))

    @property
    def id(self) -> str:
        return self.task["id"]


@dataclass
class SuiteLoad:
    tasks: list[SuiteTask]
    problems: list[Problem]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(SUITES, 0)
        for t in self.tasks:
            out[t.suite] += 1
        return out


def _plain(value: Any) -> Any:
    """YAML reads `2026-11-16` as a date; the schema wants the ISO string."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _read(path: Path, shown: str) -> tuple[Any, str, Problem | None]:
    """A suite file's data and text (read once: `_lines` reads the text again), within
    `input_files`' limits (size, nesting, YAML aliases), or the one problem that stopped it
    (not UTF-8, not valid, an impossible date: with its line)."""
    text = ""
    try:
        text = read_text(path)
        if path.suffix == ".json":
            return load_json(text, shown), text, None
        return load_yaml(text, shown), text, None
    except InputFileError as e:
        return None, text, Problem(shown, "-", "$", e.problem, e.line)


def _lines(path: Path, text: str) -> list[dict[str, int]]:
    """Per task of a YAML file (`text`), the line it starts on ("") and of each top-level
    field, so a problem points at the line to edit. Empty for JSON (positions are not kept)."""
    if path.suffix == ".json":
        return []
    try:
        node = compose_yaml(text)
    except yaml.YAMLError:
        return []
    items = node.value if isinstance(node, yaml.SequenceNode) else [node] if node else []
    out: list[dict[str, int]] = []
    for item in items:
        lines = {"": item.start_mark.line + 1}
        if isinstance(item, yaml.MappingNode):
            for key, _ in item.value:
                lines[str(key.value)] = key.start_mark.line + 1
        out.append(lines)
    return out


def _at(problem: Problem, lines: dict[str, int]) -> Problem:
    top = re.split(r"[.\[]", problem.path.removeprefix("$."), maxsplit=1)[0]
    line = lines.get(top) if problem.path != "$" else None
    return replace(problem, line=line or lines.get(""))


def _derived_id(raw: dict) -> str | None:
    parts = [raw.get(k) for k in ("site", "day", "intent", "entry_url")]
    if not all(isinstance(p, str) and p for p in parts):
        return None
    key = raw.get("key")
    entry = parts[3] + (f"#{key}" if isinstance(key, str) and key else "")
    return task_id(parts[0], parts[1], parts[2], entry)


def _placeholders(text: str) -> list[str]:
    try:
        return [f for _, f, _, _ in string.Formatter().parse(text) if f]
    except ValueError:
        return []


def _check_task(
    raw: Any,
    suite: str,
    shown: str,
    index: int,
    allowed: set[str],
    site_keys: set[str] | None,
) -> tuple[SuiteTask | None, list[Problem]]:
    if not isinstance(raw, dict):
        return None, [
            Problem(shown, f"#{index}", "$", f"a task must be a mapping, not {type(raw).__name__}")
        ]
    raw = _plain(raw)
    given = raw.get("id")
    tid = given if isinstance(given, str) and given else (_derived_id(raw) or f"#{index}")
    problems: list[Problem] = []

    def bad(path: str, message: str) -> None:
        problems.append(Problem(shown, tid, path, message))

    known = set(task_schema()["properties"])
    for name in raw:
        if name not in known and name not in SUITE_FIELDS:
            bad(f"$.{name}", "unknown field (neither a task schema field nor a suite field)")

    tags = raw.get("tags", [])
    if not isinstance(tags, list):
        bad("$.tags", f"must be a list of strings, not {type(tags).__name__}")
    else:
        for i, t in enumerate(tags):
            if not isinstance(t, str) or not t:
                bad(f"$.tags[{i}]", "must be a non-empty string")
    reason = raw.get("reason")
    if reason is not None and (not isinstance(reason, str) or not reason.strip()):
        bad("$.reason", "must be a non-empty string")
    if "key" in raw and not isinstance(raw["key"], str):
        bad("$.key", "must be a string")
    gating = {**DEFAULT_GATING, **SUITE_GATING.get(suite, {})}
    if "gating" in raw:
        if not isinstance(raw["gating"], dict):
            bad("$.gating", "must be a mapping (accuracy, safety)")
        else:
            for k, v in raw["gating"].items():
                if k not in GATING:
                    bad(f"$.gating.{k}", f"unknown gate (known: {', '.join(GATING)})")
                elif v not in GATING[k]:
                    bad(f"$.gating.{k}", f"must be one of {', '.join(GATING[k])}, not {v!r}")
                else:
                    gating[k] = v
    if suite == "regression":
        # A regression case nobody can trace back is one nobody dares delete.
        if reason is None:
            bad("$.reason", "required in regression: why this case is in the suite")
        src = raw.get("source")
        if src is None:
            bad("$.source", "required in regression: the incident or run it came from")
        elif isinstance(src, dict) and not src.get("kind"):
            bad("$.source.kind", "required in regression: e.g. incident or run")

    intent = raw.get("intent")
    if isinstance(intent, str):
        if intent not in ALL_INTENTS:
            bad("$.intent", f"unknown intent {intent!r} (known: {', '.join(ALL_INTENTS)})")
        elif intent not in CHECKERS:
            bad("$.intent", f"no oracle: no checker for intent {intent!r} in core.scoring.checkers")
    site = raw.get("site")
    if site_keys is not None and isinstance(site, str) and site not in site_keys:
        bad("$.site", f"unknown site {site!r} (allowlist: {', '.join(sorted(site_keys))})")
    entry = raw.get("entry_url")
    web = isinstance(entry, str) and entry.startswith(("http://", "https://"))
    if web and origin_of(entry) not in allowed:
        bad("$.entry_url", f"origin {origin_of(entry)} is not on the allowlist")
    origins = raw.get("allowed_origins")
    if isinstance(origins, list):
        for i, o in enumerate(origins):
            if isinstance(o, str) and o not in allowed:
                bad(f"$.allowed_origins[{i}]", f"origin {o} is not on the allowlist")
    inputs = raw.get("inputs")
    prompt = inputs.get("prompt") if isinstance(inputs, dict) else None
    if isinstance(prompt, str) and (holes := _placeholders(prompt)):
        bad("$.inputs.prompt", f"unfilled placeholder(s): {', '.join(holes)}")
    if "suite" in raw and raw["suite"] != SCHEMA_SUITE[suite]:
        bad("$.suite", f"the file is in suites/{suite}, so suite must be {SCHEMA_SUITE[suite]!r}")

    task = {k: v for k, v in raw.items() if k in known}
    if tid.startswith("t-"):
        task.setdefault("id", tid)
        task.setdefault("seed", task_seed(tid) if _ID_RE.match(tid) else 0)
    task.setdefault("suite", SCHEMA_SUITE[suite])
    # An unknown intent is reported above; empty checks keep its report the only one.
    checks = CHECKS.get(intent, {}) if isinstance(intent, str) else {}
    task.setdefault("checks", copy.deepcopy(checks))
    if isinstance(intent, str) and intent in ORACLE_KINDS:
        task.setdefault("oracle", {"kind": ORACLE_KINDS[intent]})
    task.setdefault("reward", dict(DEFAULT_REWARD))
    task.setdefault("constraints", {})
    if web:
        task.setdefault("allowed_origins", [origin_of(entry)])
    reported = {p.path for p in problems}
    for line in validation_errors(task):
        path, _, message = line.partition(": ")
        if m := _REQUIRED_RE.match(message):  # name the missing field in the path
            path, message = f"{path}.{m[1]}", "required field is missing"
        if m := _EXTRA_RE.match(message):  # one problem per unknown nested field
            for name in _extra_names(m[1]):
                if f"{path}.{name}" not in reported:
                    bad(f"{path}.{name}", "unknown field")
            continue
        if path not in reported:  # the same field already has a clearer message
            bad(path, message)
    if problems:
        return None, problems
    loaded = SuiteTask(suite, shown, task, list(tags), reason, gating)
    return loaded, []


def _extra_names(listed: str) -> list[str]:
    """The field names jsonschema lists as unexpected: Python reprs joined by ", " ('a',
    "it's", ''), read back as literals; the listing itself when it cannot be read."""
    try:
        names = ast.literal_eval(f"({listed},)")
    except (ValueError, SyntaxError):
        return [listed]
    return [str(n) for n in names] if isinstance(names, tuple) else [listed]


def load_suites(
    root: str | Path,
    allowed_origins: Iterable[str],
    site_keys: Iterable[str] | None = None,
) -> SuiteLoad:
    """Every task under `root/<suite>/`, with every problem found; bad tasks are left out,
    the rest load. `site_keys`, when given, also checks each task's site against it."""
    root = Path(root)
    allowed = set(allowed_origins)
    keys = set(site_keys) if site_keys is not None else None
    tasks: list[SuiteTask] = []
    problems: list[Problem] = []
    if not root.is_dir():
        return SuiteLoad([], [Problem(str(root), "-", "$", "no such suites directory")])
    first: dict[str, str] = {}
    for path in sorted(p for p in root.rglob("*") if p.suffix in EXTENSIONS and p.is_file()):
        shown = str(path)
        rel = path.relative_to(root).parts
        suite = rel[0] if len(rel) > 1 else None
        if suite not in SUITES:
            problems.append(
                Problem(shown, "-", "$", f"not in a suite directory ({', '.join(SUITES)})")
            )
            continue
        _load_file(path, suite, shown, allowed, keys, first, tasks, problems)
    return SuiteLoad(tasks, problems)


def suite_of(path: str | Path) -> str | None:
    """The suite a task file belongs to: the name of the suite directory it sits in
    (`.../regression/x.yaml` -> regression), or None outside one."""
    path = Path(path)
    return path.parent.name if path.suffix in EXTENSIONS and path.parent.name in SUITES else None


def load_suite_file(
    path: str | Path,
    allowed_origins: Iterable[str],
    site_keys: Iterable[str] | None = None,
) -> SuiteLoad:
    """One suite file's tasks, loaded as `load_suites` loads them (ids, seeds and defaults
    filled, every problem named); its suite is the directory it sits in."""
    path = Path(path)
    suite = suite_of(path)
    if suite is None:
        where = f"not in a suite directory ({', '.join(SUITES)})"
        return SuiteLoad([], [Problem(str(path), "-", "$", where)])
    keys = set(site_keys) if site_keys is not None else None
    tasks: list[SuiteTask] = []
    problems: list[Problem] = []
    _load_file(path, suite, str(path), set(allowed_origins), keys, {}, tasks, problems)
    return SuiteLoad(tasks, problems)


def _load_file(
    path: Path,
    suite: str,
    shown: str,
    allowed: set[str],
    keys: set[str] | None,
    first: dict[str, str],
    tasks: list[SuiteTask],
    problems: list[Problem],
) -> None:
    """The tasks of one suite file into `tasks`, its problems into `problems`; `first` says
    which file each id was first seen in (duplicates across files are problems too)."""
    data, text, problem = _read(path, shown)
    if problem:
        problems.append(problem)
        return
    if data is None:
        problems.append(Problem(shown, "-", "$", "empty file: expected a task or a list"))
        return
    lines = _lines(path, text)
    for i, raw in enumerate(data if isinstance(data, list) else [data], start=1):
        where = lines[i - 1] if i <= len(lines) else {}
        loaded, found = _check_task(raw, suite, shown, i, allowed, keys)
        problems += sorted((_at(p, where) for p in found), key=lambda p: (p.line or 0, p.path))
        if loaded is None:
            continue
        if loaded.id in first:
            message = f"duplicate id (first in {first[loaded.id]})"
            problems.append(_at(Problem(shown, loaded.id, "$.id", message), where))
            continue
        first[loaded.id] = shown
        tasks.append(loaded)


def coverage(load: SuiteLoad, registry: SiteRegistry) -> dict[str, Any]:
    """What the suites cover: intents, sites, languages and tagged obstacles, and what they
    leave out (intents and allowlisted sites without a task)."""
    langs = {s.key: s.language for s in registry.sites}
    cells: dict[tuple[str, str, str], int] = {}
    obstacles: dict[str, int] = {}
    for t in load.tasks:
        lang = t.task["constraints"].get("language") or langs.get(t.task["site"], "?")
        cell = (t.task["intent"], t.task["site"], lang)
        cells[cell] = cells.get(cell, 0) + 1
        for tag in t.tags:
            if tag.startswith("obstacle:"):
                obstacles[tag.removeprefix("obstacle:")] = obstacles.get(tag[9:], 0) + 1
    intents = {c[0] for c in cells}
    sites = {c[1] for c in cells}
    return {
        "cells": [
            {"intent": i, "site": s, "language": lang, "tasks": n}
            for (i, s, lang), n in sorted(cells.items())
        ],
        "languages": sorted({c[2] for c in cells}),
        "obstacles": dict(sorted(obstacles.items())),
        "missing_intents": [i for i in ALL_INTENTS if i not in intents],
        "missing_sites": [k for k in registry.keys if k not in sites],
    }


def _failure(row: dict, task: dict) -> str | None:
    """The run's failure class: recorded on the row, else the scorer's verdict on it again
    (run.json keeps the run, not its score), else how the run ended."""
    if row.get("failure_class"):
        return row["failure_class"]
    try:
        from newsbench_dagster.core.scoring.score import score_safely

        # run.json keeps instants as text; the scorer does arithmetic on them.
        run = dict(row)
        for k in ("started_at", "ended_at"):
            if isinstance(run.get(k), str):
                run[k] = datetime.fromisoformat(run[k])
        score = score_safely(run, task)
        if score.get("failure_class") and score.get("failure_class") != "scorer_error":
            return score["failure_class"]
    except Exception:  # a best-effort label; the error text is recorded either way
        pass
    if row.get("env_failure"):
        return row["env_failure"]
    status = row.get("run_status")
    return status if status and status != "answered" else None


def regression_from_run(row: dict, registry: SiteRegistry, reason: str | None = None) -> dict:
    """A reduced regression task from a run's row (its run.json): the task as the agent saw
    it, plus where it came from. run.json does not carry the task's inputs, so the prompt is
    the producer's for the intent, with placeholders it cannot fill left for the curator
    (the loader flags them)."""
    site = registry.get(row["site"])
    intent = row["intent"]
    day = str(row["day"])[:10]
    task: dict[str, Any] = row.get("task") or {}
    inputs = task.get("inputs")
    if not inputs:
        lang = site.language if site.language in PROMPTS.get(intent, {}) else "en"
        template = PROMPTS.get(intent, {}).get(lang, "")
        fill = {"name": site.name, "url": row["entry_url"]}
        prompt = template.format_map(_Holes(fill)) if template else "{prompt}"
        inputs = {"prompt": prompt}
        if intent == "extract_article_metadata":  # as the producer asks it
            inputs["fields"] = ["headline", "authors", "published", "modified"]
    constraints = task.get("constraints")
    if constraints is None:
        env = row.get("environment") or {}
        constraints = {
            "geo": env.get("geo") or site.geo,
            "device_profile": env.get("device") or "desktop",
            "network": env.get("network") or "wifi",
            "respect_robots": True,
            "language": site.language,
        }
    out: dict[str, Any] = {
        "site": site.key,
        "day": day,
        "intent": intent,
        "entry_url": row["entry_url"],
        "inputs": inputs,
        "constraints": constraints,
        "tags": ["from-run", f"site:{site.key}"],
        "reason": reason or f"{row.get('agent_version')} failed this task on {day}",
    }
    probe = {
        "site": site.key,
        "day": day,
        "intent": intent,
        "entry_url": row["entry_url"],
        "checks": CHECKS.get(intent, {}),
        "oracle": task.get("oracle") or {"kind": ORACLE_KINDS.get(intent, "dom_state")},
        "reward": task.get("reward") or dict(DEFAULT_REWARD),
        "constraints": constraints,
        "allowed_origins": site.allowed_origins,
    }
    failure = _failure(row, {**probe, "id": row.get("task_id"), "inputs": inputs})
    out["source"] = {
        "kind": "run",
        "run_id": row.get("run_id"),
        "task_id": row.get("task_id"),
        "agent_version": row.get("agent_version"),
        "run_status": row.get("run_status"),
        "failure_class": failure,
        "error": row.get("error"),
        "date": day,
    }
    return out


class _Holes(dict):
    """format_map that leaves unknown placeholders as they are, for the curator to fill."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def write_task_file(path: Path, task: dict) -> None:
    """One task as YAML, fields in the order a reviewer reads them."""
    if path.exists():
        raise FileExistsError(f"{path} exists; choose another name or edit it")
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(task, sort_keys=False, allow_unicode=True, width=100)
    path.write_text(text, encoding="utf-8")


def find_run(artifacts: Path, run_id: str) -> Path | None:
    """The run.json of a run under `artifacts/runs/SITE/DAY/RUN_ID/`."""
    found = sorted((artifacts / "runs").glob(f"*/*/{run_id}/run.json"))
    return found[0] if found else None
