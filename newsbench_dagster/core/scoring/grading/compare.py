"""Comparisons of an extracted field with a value, as `require` and program checks use them:
text compared case- and space-insensitively, numbers as numbers, lists as sets."""

from __future__ import annotations

import re
from typing import Any

from newsbench_dagster.core.scoring.grading.extract import NotExtracted, as_text, to_number
from newsbench_dagster.core.scoring.grading.spec import DEFAULT_TOLERANCE, Comparison, is_number


def _norm(v: Any) -> str:
    return " ".join(as_text(v).split()).casefold()


def _equals(a: Any, b: Any) -> bool:
    if isinstance(a, list | tuple) or isinstance(b, list | tuple):
        if not (isinstance(a, list | tuple) and isinstance(b, list | tuple)):
            return False
        return {_norm(x) for x in a} == {_norm(x) for x in b}
    if isinstance(a, bool) or isinstance(b, bool):
        return _norm(a) == _norm(b)
    if is_number(a) or is_number(b):
        try:
            return to_number(a) == to_number(b)
        except NotExtracted:
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
        ok = any(re.search(expected, as_text(x)) for x in items)
        return ok, f"{got}, which does not match {expected!r}"
    # numeric ops
    try:
        a = to_number(actual)
    except NotExtracted as e:
        return False, f"{got}: {e}"
    b = float(expected)
    if op == "approx":
        tol = DEFAULT_TOLERANCE if cmp.tolerance is None else cmp.tolerance
        # Relative to the expected value: a price of 0 must be exactly 0.
        return abs(a - b) <= tol * abs(b), f"{got}, not within {tol:g} (relative) of {b:g}"
    ok = {"gt": a > b, "gte": a >= b, "lt": a < b, "lte": a <= b}[op]
    sign = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[op]
    return ok, f"{got}, expected {sign} {expected!r}"


def run_comparison(
    cmp: Comparison, values: dict[str, Any], errors: dict[str, str]
) -> tuple[bool, str | None]:
    # Not extracted is a failure, never a pass (not even for `empty`).
    if cmp.field in errors:
        return False, f"field {cmp.field!r} not extracted: {errors[cmp.field]}"
    passed, reason = _compare(cmp, values[cmp.field])
    return passed, None if passed else reason
