"""A value as JSON holds it: for records written to tables, artifacts and reports."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any


def json_ready(value: Any) -> Any:
    """Mappings with text keys, sequences and sets as lists, dates and times in ISO 8601; text,
    numbers, booleans and None as they are; anything else as its text."""
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [json_ready(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, date | datetime):
        return value.isoformat()
    return str(value)
