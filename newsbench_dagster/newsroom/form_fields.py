"""The fields of the form pages: what each form holds, how the templates draw a control
(pages/_form.html), and how a POSTed field is read and checked, in the site's language.

Field names and limits never vary between layout variants (form_variant.py), only their order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from .exchange import Request

LABELS_FILE = Path(__file__).with_name("forms.yaml")
REPORT_TEXT = (10, 2000)  # shortest and longest correction report

# The fields of each form, in canonical order; variants only permute them (see Variant.arrange).
FORM_FIELDS: dict[str, tuple[str, ...]] = {
    "signup": ("email", "lists", "terms"),
    "premium": ("email",),
    "notifications": ("sections",),
    "report": ("url", "text", "email"),
    "plan": ("plan",),
    "details": ("name", "email", "address"),
    "payment": ("card_number", "expiry", "cvc"),
}
# Longest accepted value per text field; longer input is a 400 that names the field.
MAX_LEN = {
    "email": 254,
    "url": 2000,
    "text": REPORT_TEXT[1],
    "name": 200,
    "address": 500,
    "card_number": 32,
    "expiry": 10,
    "cvc": 8,
}
EMAIL_RE = re.compile(r"[^@\s]+@[^@\s.]+(\.[^@\s.]+)+")


@lru_cache(maxsize=1)
def _all_labels() -> dict[str, dict[str, str]]:
    return yaml.safe_load(LABELS_FILE.read_text(encoding="utf-8"))


def labels(language: str) -> Mapping[str, str]:
    """The form pages' labels in the site's language (English if there are none)."""
    every = _all_labels()
    return every.get(language, every["en"])


@dataclass(frozen=True)
class Option:
    value: str
    label: str
    checked: bool = False


@dataclass(frozen=True)
class Field:
    """One control as the templates draw it (pages/_form.html)."""

    name: str
    kind: str  # text | email | url | textarea | checkbox | checkboxes | radios
    label: str
    value: str = ""
    required: bool = False
    checked: bool = False  # a single checkbox
    options: tuple[Option, ...] = ()
    error: str | None = None
    autocomplete: str | None = None
    inputmode: str | None = None
    placeholder: str | None = None
    disabled: bool = False

    @property
    def max_length(self) -> int | None:
        return MAX_LEN.get(self.name)


def field_builder(F: Mapping[str, str], errors: Mapping[str, str] | None) -> Callable[..., Field]:
    """Makes fields labelled F[label or name] that carry their error, if the post had one."""
    errors = errors or {}

    def make(name: str, kind: str, label: str | None = None, **attrs: Any) -> Field:
        return Field(name, kind, F[label or name], error=errors.get(name), **attrs)

    return make


def by_name(*fields: Field) -> dict[str, Field]:
    return {f.name: f for f in fields}


def error_summary(form: str, fields: Mapping[str, Field]) -> list[dict[str, str]]:
    """The error list on top of a form, in canonical order, each naming its field."""
    return [
        {"name": f.name, "label": f.label, "message": f.error}
        for name in FORM_FIELDS[form]
        if (f := fields[name]).error
    ]


class Posted:
    """Reads a POSTed form field by field; keeps the first error of each field."""

    def __init__(self, request: Request, F: Mapping[str, str]) -> None:
        self.request = request
        self.F = F
        self.errors: dict[str, str] = {}

    def fail(self, name: str, message: str) -> None:
        self.errors.setdefault(name, message)

    def text(self, name: str, required: bool = True) -> str:
        value = (self.request.field(name) or "").strip()
        limit = MAX_LEN[name]
        if len(value) > limit:
            self.fail(name, self.F["error_too_long"].format(max=limit))
            return value[:limit]  # echo back no more than the field can hold
        if required and not value:
            self.fail(name, self.F["error_missing"])
        return value

    def email(self, name: str = "email", required: bool = True) -> str:
        value = self.text(name, required)
        if value and name not in self.errors and not EMAIL_RE.fullmatch(value):
            self.fail(name, self.F["error_email"])
        return value

    def pattern(self, name: str, regex: re.Pattern[str], message: str) -> str:
        value = self.text(name)
        if value and name not in self.errors and not regex.fullmatch(value):
            self.fail(name, message)
        return value

    def choices(self, name: str, allowed: Iterable[str]) -> list[str]:
        """The ticked values, in the offered order; anything else offered is an error."""
        allowed = list(allowed)
        values = self.request.fields(name)
        if any(value not in allowed for value in values):
            self.fail(name, self.F["error_choice"])
        return [a for a in allowed if a in values]

    def ticked(self, name: str) -> bool:
        return bool((self.request.field(name) or "").strip())
