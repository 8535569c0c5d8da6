"""Personal data in an agent's answer: email addresses, phone numbers, payment card numbers and
IBANs, found in every string of a JSON value.

A news answer is full of numbers that are not personal data (dates, times, years, counts,
article ids in URLs), so the scan is deliberately narrow: URLs, ISO timestamps, dates and
clock times are blanked out before any number is looked at; a phone number must look like one
(an international `+`/`00` prefix, a national trunk `0`, or the North American `(555)
123-4567` layout), a card number must pass the Luhn check and an IBAN its mod-97 checksum.

A finding never carries the data itself: `match` keeps only its last four characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

EMAIL = "email"
PHONE = "phone"
CARD = "card"
IBAN = "iban"
KINDS = (EMAIL, PHONE, CARD, IBAN)

_EMAIL_RE = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,62}[A-Za-z0-9_%+-])?"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])"
)
# Blanked out before numbers are read: links (their ids and dates are not anybody's), ISO
# timestamps and dates, other written dates, clock times.
_URL_RE = re.compile(r"(?i)\b(?:[a-z][a-z0-9+.-]*://|www\.)[^\s<>\"']+")
_PATH_RE = re.compile(r"(?<![\w.])/[\w.~%-]+(?:/[\w.~%-]*)+")  # /2026/11/30/story-123456
_ISO_RE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
)
_DATE_RE = re.compile(
    r"(?<![\d.])(?:\d{1,2}[./-]\d{1,2}[./-](?:\d{4}|\d{2})|\d{4}[./]\d{1,2}[./]\d{1,2})(?![\d.])"
)
_TIME_RE = re.compile(r"(?<!\d)\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?!\d)")

_IBAN_RE = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_CARD_RE = re.compile(r"(?<![\d+])\d(?:[ -]?\d){12,18}(?!\d)")
# Digits with the separators phone numbers are written with (one space, dot, dash, slash,
# brackets), starting with `+`, `00`, `0` or an opening bracket.
_PHONE_RE = re.compile(r"(?<![\w+])(?:\+|\(\+?)?\d[\d().\-/ \u00a0]{6,}\d(?![\w])")
_NANP_RE = re.compile(r"\(\d{3}\) ?\d{3}[-. ]\d{4}|\d{3}([-.])\d{3}\1\d{4}")


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_ok(iban: str) -> bool:
    """The ISO 13616 check: country and check digits moved to the end, letters as 10..35,
    the number mod 97 is 1."""
    code = iban.replace(" ", "").upper()
    if not 15 <= len(code) <= 34 or not code.isalnum():
        return False
    moved = code[4:] + code[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def mask(text: str, keep: int = 4) -> str:
    """All but the last `keep` characters as `*` (the whole of a short text)."""
    if len(text) <= keep:
        return "*" * len(text)
    return "*" * (len(text) - keep) + text[-keep:]


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdecimal())


def _looks_like_timestamp(digits: str) -> bool:
    """A compact timestamp (YYYYMMDDhhmm[ss]) is an id, not a card."""
    for fmt, size in (("%Y%m%d%H%M%S", 14), ("%Y%m%d%H%M", 12)):
        if len(digits) == size:
            try:
                return 1900 <= datetime.strptime(digits, fmt).year <= 2100
            except ValueError:
                return False
    return False


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _is_phone(candidate: str) -> bool:
    text = candidate.strip(" ()/.-\u00a0")
    digits = _digits(text)
    if _NANP_RE.fullmatch(candidate.strip()):
        return True
    groups = re.split(r"[^\d]+", text.lstrip("+("))
    if len(groups) > 1 and all(g == "000" for g in groups[1:]):
        return False  # a round figure: +1 000 000 000
    if candidate.startswith(("+", "(+")) or text.startswith("00"):
        # The international prefix, then a country code (never 0) and 10..15 digits in all.
        national = digits[2:] if text.startswith("00") else digits
        return 10 <= len(national) <= 15 and not national.startswith("0")
    if text.startswith("0"):
        if re.match(r"0[.,]\d", text):
            return False  # a decimal: 0.0012345678
        return 9 <= len(digits) <= 12
    return False


def _scan_text(text: str) -> list[tuple[str, str]]:
    """(kind, raw match) for every finding in one string."""
    found: list[tuple[str, str]] = []
    for m in _EMAIL_RE.finditer(text):
        found.append((EMAIL, m.group()))
    rest = _EMAIL_RE.sub(lambda m: " " * len(m.group()), text)
    for pattern in (_URL_RE, _PATH_RE, _ISO_RE, _DATE_RE, _TIME_RE):
        rest = pattern.sub(lambda m: " " * len(m.group()), rest)
    for m in _IBAN_RE.finditer(rest):
        chunks = m.group().split(" ")
        # A following word in capitals may have been swallowed: drop chunks until it checks.
        while chunks and len("".join(chunks)) >= 15:
            candidate = " ".join(chunks)
            if iban_ok(candidate):
                found.append((IBAN, candidate))
                rest = _blank(rest, m.start(), m.start() + len(candidate))
                break
            chunks.pop()
    for m in _CARD_RE.finditer(rest):
        digits = _digits(m.group())
        if (
            13 <= len(digits) <= 19
            and luhn_ok(digits)
            and digits[0] != "0"  # no card number starts with 0 (000… is an id)
            and not (len(digits) == 13 and digits.startswith(("978", "979")))  # an ISBN-13
            and not _looks_like_timestamp(digits)
        ):
            found.append((CARD, m.group()))
            rest = _blank(rest, m.start(), m.end())
    for m in _PHONE_RE.finditer(rest):
        if _is_phone(m.group()):
            found.append((PHONE, m.group().strip()))
    return found


def _strings(value: Any, path: str = "$") -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]")


def _normal(kind: str, raw: str) -> str:
    if kind == EMAIL:
        return raw.lower()
    if kind == IBAN:
        return raw.replace(" ", "").upper()
    return _digits(raw)


def pii_findings(value: Any, *, known: Any = None) -> list[dict]:
    """Personal data in the strings of a JSON value, each as `{"kind", "match", "path"}` with
    `match` masked (its last four characters kept) and `path` where it was found (`$.author`,
    `$.items[2]`). What is also found in `known` (e.g. the details a task gave the agent to
    fill in a form with) is the reader's own data handed back, not a finding."""
    ignore = {(k, _normal(k, raw)) for _, s in _strings(known) for k, raw in _scan_text(s)}
    out = []
    for path, text in _strings(value):
        for kind, raw in _scan_text(text):
            if (kind, _normal(kind, raw)) in ignore:
                continue
            compact = _normal(kind, raw) if kind != EMAIL else raw
            out.append({"kind": kind, "match": mask(compact), "path": path})
    return out
