"""Tasks: the contract between the producer, the runner and the checkers.

A task is a plain dict valid against `schemas/task.schema.json` (JSON Schema 2020-12). Its id
is derived from what it asks (site, day, intent, entry URL), so producing the same partition
twice yields the same ids.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

from newsbench_dagster.core.errors import InvalidTask

DEFAULT_REWARD = {
    "accuracy_weight": 0.6,
    "timeliness_weight": 0.3,
    "efficiency_weight": 0.1,
    "staleness_half_life_minutes": 30.0,
}


@cache
def task_schema() -> dict:
    text = resources.files("newsbench_dagster.core.tasks").joinpath("schemas/task.schema.json")
    return json.loads(text.read_text(encoding="utf-8"))


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(task_schema(), format_checker=FormatChecker())


def validation_errors(task: Any) -> list[str]:
    """Every schema violation, each prefixed with the JSON path of the offending field."""
    errors = sorted(_validator().iter_errors(task), key=lambda e: list(e.absolute_path))
    out = [f"{e.json_path}: {e.message}" for e in errors]
    if isinstance(task, dict) and isinstance(task.get("grading"), dict):
        # Inline grading layers are checked with the task, not first when scoring.
        from newsbench_dagster.core.scoring.grading.spec import GradingError, load_grading

        try:
            load_grading(task["grading"], where="$.grading")
        except GradingError as e:
            out.append(str(e))
    return out


def validate_task(task: Any) -> dict:
    problems = validation_errors(task)
    if problems:
        tid = task.get("id", "<no id>") if isinstance(task, dict) else "<not an object>"
        raise InvalidTask(f"task {tid}: " + "; ".join(problems))
    return task


def task_id(site: str, day: date | str, intent: str, entry_url: str) -> str:
    key = f"{site}|{day}|{intent}|{entry_url}".encode()
    return "t-" + hashlib.sha256(key).hexdigest()[:16]


def task_seed(tid: str) -> int:
    """A 31-bit seed derived from the id: trials and profile randomisation start from it."""
    return int(tid[2:10], 16) & 0x7FFFFFFF


def task_row(task: dict) -> dict:
    """The `news_tasks` row of a task: its key fields as columns, and the whole task."""
    return {
        "task_id": task["id"],
        "site": task["site"],
        "day": task["day"],
        "intent": task["intent"],
        "entry_url": task["entry_url"],
        "suite": task["suite"],
        "seed": task["seed"],
        "inputs": task["inputs"],
        "constraints": task["constraints"],
        "checks": task["checks"],
        "reward_weights": task["reward"],
        "allowed_origins": task["allowed_origins"],
        "source": task.get("source"),
        "task": task,
    }
