"""Extraction: the typed fields a grading spec pulls out of the agent's answer (a dotted path,
an optional regex, a type), and why a field could not be extracted."""

from __future__ import annotations

import math
import re
from datetime import date, datetime
from typing import Any

from newsbench_dagster.core.scoring.grading.spec import ExtractField, GradingSpec, is_number


class NotExtracted(Exception):
    """A field could not be extracted from the answer; the message says why."""


def _resolve(answer: Any, path: str | None) -> Any:
    value = answer
    walked: list[str] = []
    for part in path.split(".") if path else ():
        where = ".".join(walked) or "the answer"
        if isinstance(value, dict):
            if part not in value:
                raise NotExtracted(f"path {path!r}: key {part!r} not found in {where}")
            value = value[part]
        elif isinstance(value, list | tuple):
            try:
                value = value[int(part)]
            except ValueError:
                raise NotExtracted(
                    f"path {path!r}: {where} is a list, {part!r} is not an index"
                ) from None
            except IndexError:
                raise NotExtracted(
                    f"path {path!r}: index {part} out of range in {where} (length {len(value)})"
                ) from None
        else:
            raise NotExtracted(
                f"path {path!r}: {where} is a {type(value).__name__}, cannot look up {part!r}"
            )
        walked.append(part)
    if value is None:
        raise NotExtracted(f"path {path!r}: value is null" if path else "the answer is null")
    return value


_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$")


def to_number(v: Any) -> float:
    if is_number(v):
        f = float(v)
    elif isinstance(v, str):
        s = v.strip()
        if _THOUSANDS.match(s):
            s = s.replace(",", "")
        try:
            f = float(s)
        except ValueError:
            raise NotExtracted(f"cannot convert {v!r} to a number") from None
    else:
        raise NotExtracted(f"cannot convert {type(v).__name__} {v!r} to a number")
    if not math.isfinite(f):
        raise NotExtracted(f"{v!r} is not a finite number")
    return f


def _convert(v: Any, kind: str) -> Any:
    if kind == "string":
        if isinstance(v, dict | list | tuple):
            raise NotExtracted(f"expected a string, got {type(v).__name__}")
        return as_text(v)
    if kind == "number":
        return to_number(v)
    if kind == "integer":
        f = to_number(v)
        if not f.is_integer():
            raise NotExtracted(f"{v!r} is not an integer")
        return int(f)
    if kind == "boolean":
        if isinstance(v, bool):
            return v
        s = as_text(v).strip().lower()
        if s in ("true", "yes", "1"):
            return True
        if s in ("false", "no", "0"):
            return False
        raise NotExtracted(f"cannot convert {v!r} to a boolean")
    if isinstance(v, list | tuple):  # list
        return list(v)
    raise NotExtracted(f"expected a list, got {type(v).__name__}")


def _extract_one(answer: Any, spec: ExtractField) -> Any:
    value = _resolve(answer, spec.path)
    if spec.regex:
        if isinstance(value, dict | list | tuple):
            raise NotExtracted(f"regex needs a string value, got {type(value).__name__}")
        text = as_text(value)
        m = re.search(spec.regex, text)
        if not m:
            raise NotExtracted(f"regex {spec.regex!r} did not match {text!r}")
        value = m.group(1) if m.re.groups else m.group(0)
        if value is None:  # an optional group that did not take part
            raise NotExtracted(f"regex {spec.regex!r}: group 1 did not match in {text!r}")
    return _convert(value, spec.type)


def extract_fields(spec: GradingSpec, answer: Any) -> tuple[dict[str, Any], dict[str, str]]:
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
        except NotExtracted as e:
            values[name] = None
            errors[name] = str(e)
    return values, errors


def as_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, date | datetime):  # YAML turns 2026-01-05 into a date
        return v.isoformat()
    return str(v)
