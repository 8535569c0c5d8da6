"""Per-task grading layers for replayed browser-agent runs (WARC-Bench style).

A grading spec has four optional layers: `extract` pulls typed fields out of the agent's
answer, `require` compares them (any failure scores 0), `checks` are yes/no questions decided
by a program or a judge (required ones gate the run, weighted ones give partial credit), and
`trace` rules look at the requests the agent made during the replay (a forbidden order, an
add-to-cart the recording never answered). Nothing unverified is ever counted as passed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from newsbench_dagster.core.errors import NewsbenchError

Judge = Callable[[str, Any, dict], bool | None]
"""(question, answer, extracted fields) -> True (yes) / False (no) / None (abstains)."""

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


def _is_number(v: Any) -> bool:
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
        if op in _NUMERIC_OPS and not _is_number(v):
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
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise GradingError(f"{path}: cannot read grading file: {e}") from e
        try:
            raw = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
        except (yaml.YAMLError, json.JSONDecodeError) as e:
            raise GradingError(f"{path}: not valid {path.suffix.lstrip('.') or 'YAML'}: {e}") from e
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


# --- extraction -------------------------------------------------------------------------------


class _NotExtracted(Exception):
    pass


def _resolve(answer: Any, path: str | None) -> Any:
    value = answer
    walked: list[str] = []
    for part in path.split(".") if path else ():
        where = ".".join(walked) or "the answer"
        if isinstance(value, dict):
            if part not in value:
                raise _NotExtracted(f"path {path!r}: key {part!r} not found in {where}")
            value = value[part]
        elif isinstance(value, list | tuple):
            try:
                value = value[int(part)]
            except ValueError:
                raise _NotExtracted(
                    f"path {path!r}: {where} is a list, {part!r} is not an index"
                ) from None
            except IndexError:
                raise _NotExtracted(
                    f"path {path!r}: index {part} out of range in {where} (length {len(value)})"
                ) from None
        else:
            raise _NotExtracted(
                f"path {path!r}: {where} is a {type(value).__name__}, cannot look up {part!r}"
            )
        walked.append(part)
    if value is None:
        raise _NotExtracted(f"path {path!r}: value is null" if path else "the answer is null")
    return value


_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$")


def _to_number(v: Any) -> float:
    if _is_number(v):
        f = float(v)
    elif isinstance(v, str):
        s = v.strip()
        if _THOUSANDS.match(s):
            s = s.replace(",", "")
        try:
            f = float(s)
        except ValueError:
            raise _NotExtracted(f"cannot convert {v!r} to a number") from None
    else:
        raise _NotExtracted(f"cannot convert {type(v).__name__} {v!r} to a number")
    if not math.isfinite(f):
        raise _NotExtracted(f"{v!r} is not a finite number")
    return f


def _convert(v: Any, kind: str) -> Any:
    if kind == "string":
        if isinstance(v, dict | list | tuple):
            raise _NotExtracted(f"expected a string, got {type(v).__name__}")
        return _text(v)
    if kind == "number":
        return _to_number(v)
    if kind == "integer":
        f = _to_number(v)
        if not f.is_integer():
            raise _NotExtracted(f"{v!r} is not an integer")
        return int(f)
    if kind == "boolean":
        if isinstance(v, bool):
            return v
        s = _text(v).strip().lower()
        if s in ("true", "yes", "1"):
            return True
        if s in ("false", "no", "0"):
            return False
        raise _NotExtracted(f"cannot convert {v!r} to a boolean")
    if isinstance(v, list | tuple):  # list
        return list(v)
    raise _NotExtracted(f"expected a list, got {type(v).__name__}")


def _extract_one(answer: Any, spec: ExtractField) -> Any:
    value = _resolve(answer, spec.path)
    if spec.regex:
        if isinstance(value, dict | list | tuple):
            raise _NotExtracted(f"regex needs a string value, got {type(value).__name__}")
        text = _text(value)
        m = re.search(spec.regex, text)
        if not m:
            raise _NotExtracted(f"regex {spec.regex!r} did not match {text!r}")
        value = m.group(1) if m.re.groups else m.group(0)
        if value is None:  # an optional group that did not take part
            raise _NotExtracted(f"regex {spec.regex!r}: group 1 did not match in {text!r}")
    return _convert(value, spec.type)


def _extract(spec: GradingSpec, answer: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """Declared fields, plus any field a comparison names without declaring it (read raw from
    the answer at that dotted path)."""
    fields = dict(spec.extract)
    for cmp in [*spec.require, *(c.program for c in spec.checks if c.program)]:
        fields.setdefault(cmp.field, None)
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name, fspec in fields.items():
        try:
            values[name] = (
                _extract_one(answer, fspec) if fspec else _resolve(answer, name)  # implicit
            )
        except _NotExtracted as e:
            values[name] = None
            errors[name] = str(e)
    return values, errors


# --- comparisons ------------------------------------------------------------------------------


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, date | datetime):  # YAML turns 2026-01-05 into a date
        return v.isoformat()
    return str(v)


def _norm(v: Any) -> str:
    return " ".join(_text(v).split()).casefold()


def _equals(a: Any, b: Any) -> bool:
    if isinstance(a, list | tuple) or isinstance(b, list | tuple):
        if not (isinstance(a, list | tuple) and isinstance(b, list | tuple)):
            return False
        return {_norm(x) for x in a} == {_norm(x) for x in b}
    if isinstance(a, bool) or isinstance(b, bool):
        return _norm(a) == _norm(b)
    if _is_number(a) or _is_number(b):
        try:
            return _to_number(a) == _to_number(b)
        except _NotExtracted:
            return False
    return _norm(a) == _norm(b)


def _empty(v: Any) -> bool:
    if isinstance(v, str):
        return not v.strip()
    return isinstance(v, list | tuple | dict) and not v


def _compare(cmp: Comparison, actual: Any) -> tuple[bool, str | None]:
    """(passed, reason when it failed)."""
    op, expected = cmp.op, cmp.value
    got = f"got {actual!r}"
    if op == "equals":
        return _equals(actual, expected), f"{got}, expected {expected!r}"
    if op == "not_equals":
        return not _equals(actual, expected), f"{got}, which equals {expected!r}"
    if op == "not_empty":
        return not _empty(actual), f"{got}, which is empty"
    if op == "empty":
        return _empty(actual), f"{got}, which is not empty"
    if op == "in":
        if isinstance(actual, list | tuple):  # every element must be allowed
            if not actual:
                return False, "got an empty list"
            bad = [x for x in actual if not any(_equals(x, e) for e in expected)]
            return not bad, f"{bad!r} not in {expected!r}"
        return any(_equals(actual, e) for e in expected), f"{got}, not in {expected!r}"
    if op in ("contains", "matches"):
        if isinstance(actual, dict):
            return False, f"{got}: cannot search a mapping"
        items = actual if isinstance(actual, list | tuple) else [actual]
        if op == "contains":
            ok = any(_norm(expected) in _norm(x) for x in items)
            return ok, f"{got}, which does not contain {expected!r}"
        ok = any(re.search(expected, _text(x)) for x in items)
        return ok, f"{got}, which does not match {expected!r}"
    # numeric ops
    try:
        a = _to_number(actual)
    except _NotExtracted as e:
        return False, f"{got}: {e}"
    b = float(expected)
    if op == "approx":
        tol = DEFAULT_TOLERANCE if cmp.tolerance is None else cmp.tolerance
        # Relative to the expected value: a price of 0 must be exactly 0.
        return abs(a - b) <= tol * abs(b), f"{got}, not within {tol:g} (relative) of {b:g}"
    ok = {"gt": a > b, "gte": a >= b, "lt": a < b, "lte": a <= b}[op]
    sign = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[op]
    return ok, f"{got}, expected {sign} {expected!r}"


def _run_comparison(
    cmp: Comparison, values: dict[str, Any], errors: dict[str, str]
) -> tuple[bool, str | None]:
    # Not extracted is a failure, never a pass (not even for `empty`).
    if cmp.field in errors:
        return False, f"field {cmp.field!r} not extracted: {errors[cmp.field]}"
    passed, reason = _compare(cmp, values[cmp.field])
    return passed, None if passed else reason


# --- trace ------------------------------------------------------------------------------------


def _describe(request: dict) -> str:
    return f"{str(request.get('method') or '?').upper()} {request.get('url', '')}"


def _run_trace(rule: TraceRule, counted: list[dict]) -> dict:
    pattern = rule.forbid or rule.require
    assert pattern is not None  # the spec guarantees one of them
    hits = [r for r in counted if pattern.matches(r)]
    if rule.forbid is not None:
        passed = not hits
        reason = None if passed else "forbidden request made: " + ", ".join(map(_describe, hits))
    elif not hits:
        passed, reason = False, "no matching request was made"
    else:
        allowed = rule.allowed_tags
        # Every matching request must have been answered from the recording: a `miss` means the
        # site never saw it, so the action did not happen in the replayed world.
        bad = [r for r in hits if r.get("tag") not in allowed]
        passed = not bad
        reason = None
        if bad:
            reason = "; ".join(
                f"{_describe(r)} answered as {r.get('tag')!r} (needs one of: {', '.join(allowed)})"
                for r in bad
            )
    return {
        "id": rule.id,
        "kind": "forbid" if rule.forbid is not None else "require",
        "passed": passed,
        "reason": reason,
        "requests": [str(r.get("url", "")) for r in hits],
    }


# --- grading ----------------------------------------------------------------------------------


@dataclass
class GradeResult:
    status: Literal["pass", "fail", "unverified"]
    score: float | None
    extracted: dict[str, Any] = field(default_factory=dict)
    extract_errors: dict[str, str] = field(default_factory=dict)
    require: list[dict] = field(default_factory=list)
    checks: list[dict] = field(default_factory=list)
    trace: list[dict] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return _jsonable(asdict(self))


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple | set):
        return [_jsonable(x) for x in v]
    if v is None or isinstance(v, str | int | float | bool):
        return v
    if isinstance(v, date | datetime):
        return v.isoformat()
    return str(v)


def _ask_judge(judge: Judge, check: Check, answer: Any, extracted: dict) -> tuple[str, str | None]:
    try:
        said = judge(check.question, answer, dict(extracted))
    except Exception as e:  # a hosted model failing says nothing about the answer
        return "unverified", f"judge failed: {type(e).__name__}: {e}"
    if said is True:
        return "yes", None
    if said is False:
        return "no", "judge said no"
    if said is None:
        return "unverified", "judge abstained"
    return "unverified", f"judge returned {said!r}, expected True, False or None"


def _decide(
    check: Check,
    answer: Any,
    values: dict[str, Any],
    errors: dict[str, str],
    judge: Judge | None,
) -> dict:
    if check.program is not None:
        passed, reason = _run_comparison(check.program, values, errors)
        verdict, by = ("yes" if passed else "no"), "program"
    elif judge is not None:
        extracted = {k: v for k, v in values.items() if k not in errors}
        verdict, reason = _ask_judge(judge, check, answer, extracted)
        by = "judge"
    else:
        verdict, by, reason = "unverified", None, "no program and no judge to decide it"
    return {
        "id": check.id,
        "question": check.question,
        "required": check.required,
        "weight": None if check.required else check.weight,
        "verdict": verdict,
        "by": by,
        "reason": reason,
    }


def grade(
    spec: GradingSpec,
    answer: Any,
    requests: Sequence[dict] = (),
    *,
    judge: Judge | None = None,
) -> GradeResult:
    """Grade one run: its final `answer` and the replay log `requests` it made."""
    values, errors = _extract(spec, answer)
    reasons: list[str] = []
    failed = False

    require = []
    for i, cmp in enumerate(spec.require):
        passed, reason = _run_comparison(cmp, values, errors)
        require.append(
            {
                "field": cmp.field,
                "op": cmp.op,
                "value": cmp.value,
                "passed": passed,
                "reason": reason,
            }
        )
        if not passed:
            failed = True
            reasons.append(f"require[{i}] {cmp.field} {cmp.op}: {reason}")

    # The harness's own requests (warm-up, scoring the page) are not the agent's doing.
    counted = [r for r in requests if r.get("actor") != "harness"]
    trace = [_run_trace(rule, counted) for rule in spec.trace]
    for t in trace:
        if not t["passed"]:
            failed = True
            reasons.append(f"trace {t['id']} ({t['kind']}): {t['reason']}")

    checks = [_decide(c, answer, values, errors, judge) for c in spec.checks]
    required_unverified = False
    yes_weight = decided_weight = 0.0
    for c in checks:
        kind = "required" if c["required"] else f"weight {c['weight']:g}"
        label = f"check {c['id']} ({kind})"
        if c["verdict"] == "unverified":
            if c["required"]:
                required_unverified = True
                reasons.append(f"{label}: unverified: {c['reason']}")
            else:
                reasons.append(f"{label}: unverified, left out of the score: {c['reason']}")
            continue
        if c["verdict"] == "no":
            reasons.append(f"{label}: no: {c['reason']}")
            if c["required"]:
                failed = True
        if not c["required"]:
            decided_weight += c["weight"]
            yes_weight += c["weight"] if c["verdict"] == "yes" else 0.0

    if failed:
        status, score = "fail", 0.0
    elif required_unverified:
        status, score = "unverified", None
    else:
        status, score = "pass", (yes_weight / decided_weight if decided_weight else 1.0)
    return GradeResult(
        status=status,
        score=score,
        extracted=values,
        extract_errors=errors,
        require=require,
        checks=checks,
        trace=trace,
        reasons=reasons,
    )
