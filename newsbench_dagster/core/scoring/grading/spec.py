"""A grading spec: its models (extract, require, checks, trace), and loading one from a task or
a YAML/JSON file with errors that name the file and every offending field path."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from newsbench_dagster.core.errors import InputFileError, NewsbenchError
from newsbench_dagster.core.input_files import load_json, load_yaml, read_text

OPS = (
    "equals",
    "not_equals",
    "contains",
    "matches",
    "in",
    "not_empty",
    "empty",
    "gt",
    "gte",
    "lt",
    "lte",
    "approx",
)
_NO_VALUE_OPS = {"empty", "not_empty"}
_NUMERIC_OPS = {"gt", "gte", "lt", "lte", "approx"}
TAGS = ("exact", "fuzzy", "search", "blocked", "miss")
DEFAULT_TRACE_TAGS = ("exact", "fuzzy", "search")
DEFAULT_TOLERANCE = 0.01


class GradingError(NewsbenchError, ValueError):
    """A grading spec is invalid; the message names the file (if any) and the field path."""


# --- the spec ---------------------------------------------------------------------------------


class _Strict(BaseModel):
    # A misspelt key (`reqiured`) must not silently turn a gate into nothing.
    model_config = ConfigDict(extra="forbid")


def _compile(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as e:
        raise ValueError(f"not a valid regex {pattern!r}: {e}") from e
    return pattern


def is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


class ExtractField(_Strict):
    """One field pulled from the answer. Without `path` the whole answer is used."""

    path: str | None = None
    regex: str | None = None
    type: Literal["string", "number", "integer", "boolean", "list"] = "string"

    @field_validator("path")
    @classmethod
    def _path(cls, v: str | None) -> str | None:
        if v is not None and any(not part for part in v.split(".")):
            raise ValueError(f"bad dotted path {v!r} (empty segment)")
        return v

    @field_validator("regex")
    @classmethod
    def _regex(cls, v: str | None) -> str | None:
        return None if v is None else _compile(v)

    @field_validator("type")
    @classmethod
    def _type(cls, v: str, info: ValidationInfo) -> str:
        # A regex yields one string; it cannot become a list.
        if v == "list" and info.data.get("regex"):
            raise ValueError("type 'list' cannot be combined with `regex`")
        return v


class Comparison(_Strict):
    """A program comparison of an extracted field with a value (used by require and checks)."""

    field: str = Field(min_length=1)
    op: str
    value: Any = Field(default=None, validate_default=True)
    tolerance: float | None = None

    @field_validator("op")
    @classmethod
    def _op(cls, v: str) -> str:
        if v not in OPS:
            raise ValueError(f"unknown op {v!r} (expected one of: {', '.join(OPS)})")
        return v

    @field_validator("value")
    @classmethod
    def _value(cls, v: Any, info: ValidationInfo) -> Any:
        op = info.data.get("op")
        if op is None:  # the op itself was invalid; that error is enough
            return v
        if op in _NO_VALUE_OPS:
            if v is not None:
                raise ValueError(f"op {op!r} takes no value")
            return v
        if v is None:
            raise ValueError(f"op {op!r} needs a value")
        if op in _NUMERIC_OPS and not is_number(v):
            raise ValueError(f"op {op!r} needs a number, got {v!r}")
        if op == "in" and (not isinstance(v, list) or not v):
            raise ValueError(f"op 'in' needs a non-empty list, got {v!r}")
        if op == "matches":
            if not isinstance(v, str):
                raise ValueError(f"op 'matches' needs a regex string, got {v!r}")
            _compile(v)
        if op == "contains" and isinstance(v, list | dict):
            raise ValueError(f"op 'contains' needs a single value, got {v!r}")
        return v

    @field_validator("tolerance")
    @classmethod
    def _tolerance(cls, v: float | None, info: ValidationInfo) -> float | None:
        if v is None:
            return v
        if info.data.get("op") != "approx":
            raise ValueError("tolerance is only for op 'approx'")
        if v < 0:
            raise ValueError(f"tolerance must be >= 0, got {v}")
        return v


class Check(_Strict):
    """A yes/no question. Required checks gate the run; the others carry a weight."""

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    required: bool = False
    weight: float | None = None
    program: Comparison | None = None

    @field_validator("weight")
    @classmethod
    def _weight(cls, v: float | None, info: ValidationInfo) -> float | None:
        if v is None:
            return v
        if info.data.get("required"):
            raise ValueError("a required check carries no weight (it gates the run)")
        if not v > 0 or not math.isfinite(v):
            raise ValueError(f"weight must be a positive number, got {v}")
        return v

    @model_validator(mode="after")
    def _default_weight(self) -> Check:
        if not self.required and self.weight is None:
            self.weight = 1.0
        return self


class RequestPattern(_Strict):
    """Matches a request: method compared case-insensitively, url a regex searched in the URL."""

    method: str | None = None
    url: str | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        return None if v is None else _compile(v)

    @model_validator(mode="after")
    def _something(self) -> RequestPattern:
        if not self.method and not self.url:
            raise ValueError("a request pattern needs a `method`, a `url` or both")
        return self

    def matches(self, request: dict) -> bool:
        method = str(request.get("method") or "")
        if self.method and method.upper() != self.method.upper():
            return False
        return not self.url or re.search(self.url, str(request.get("url") or "")) is not None


class TraceRule(_Strict):
    """Exactly one of `forbid` (no such request) or `require` (such a request, answered from
    the recording with one of `tags`)."""

    id: str = Field(min_length=1)
    forbid: RequestPattern | None = None
    require: RequestPattern | None = None
    tags: list[str] | None = None

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if v is None:
            return v
        if info.data.get("forbid") is not None:
            raise ValueError("tags only apply to a `require` rule")
        if not v:
            raise ValueError("tags must not be empty")
        for tag in v:
            if tag not in TAGS:
                raise ValueError(f"unknown tag {tag!r} (expected one of: {', '.join(TAGS)})")
        return v

    @model_validator(mode="after")
    def _one_kind(self) -> TraceRule:
        if (self.forbid is None) == (self.require is None):
            raise ValueError("a trace rule needs exactly one of `forbid` or `require`")
        return self

    @property
    def allowed_tags(self) -> tuple[str, ...]:
        return tuple(self.tags) if self.tags else DEFAULT_TRACE_TAGS


class GradingSpec(_Strict):
    extract: dict[str, ExtractField] = Field(default_factory=dict)
    require: list[Comparison] = Field(default_factory=list)
    checks: list[Check] = Field(default_factory=list)
    trace: list[TraceRule] = Field(default_factory=list)


# --- loading ----------------------------------------------------------------------------------


def _loc(where: str, loc: tuple) -> str:
    out = where
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _message(msg: str) -> str:
    return msg.removeprefix("Value error, ")


def load_grading(source: dict | str | Path | GradingSpec, *, where: str = "grading") -> GradingSpec:
    """A spec from a dict (inline in a task) or a YAML/JSON file path. Raises GradingError
    naming the file and every offending field path."""
    if isinstance(source, GradingSpec):
        return source
    prefix = ""
    if isinstance(source, str | Path):
        path = Path(source)
        prefix = f"{path}: "
        try:
            text = read_text(path)
        except InputFileError as e:
            raise GradingError(f"cannot read grading file {e}") from e
        try:
            raw = load_json(text, path) if path.suffix.lower() == ".json" else load_yaml(text, path)
        except InputFileError as e:
            raise GradingError(str(e)) from e
    else:
        raw = source
    if not isinstance(raw, dict):
        raise GradingError(f"{prefix}{where}: expected a mapping, got {type(raw).__name__}")
    try:
        spec = GradingSpec.model_validate(raw)
    except ValidationError as e:
        problems = "; ".join(
            f"{prefix}{_loc(where, tuple(err['loc']))}: {_message(err['msg'])}"
            for err in e.errors()
        )
        raise GradingError(problems) from e
    problems = [f"{prefix}{p}" for p in _cross_problems(spec, where)]
    if problems:
        raise GradingError("; ".join(problems))
    return spec


def _cross_problems(spec: GradingSpec, where: str) -> list[str]:
    problems = []
    # A spec that grades nothing would pass every answer.
    if not (spec.require or spec.checks or spec.trace):
        problems.append(f"{where}: grades nothing (declare require, checks or trace)")
    for layer, items in (("checks", spec.checks), ("trace", spec.trace)):
        seen: set[str] = set()
        for i, item in enumerate(items):
            if item.id in seen:
                problems.append(f"{where}.{layer}[{i}].id: duplicate id {item.id!r}")
            seen.add(item.id)
    return problems
