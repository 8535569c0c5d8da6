"""Text and time normalisation shared by checkers: what counts as "the same" headline or time."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime

from dateutil import parser as dateparser
from rapidfuzz import fuzz

_QUOTES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u00a0": " ",
    }
)
# Labels sites put in front of a headline that are not part of it.
_PREFIXES = re.compile(
    r"^(opinion|analysis|live|breaking|exclusive|watch|meinung|kommentar|analyse|eilmeldung|"
    r"tribune|analyse|direct|en direct|exclusif)\s*[:|\-]\s*",
    re.IGNORECASE,
)


def normalize_text(text: str | None, site_names: tuple[str, ...] = ()) -> str:
    """Unescape entities, unify quotes and dashes, collapse whitespace, drop section labels and
    a leading or trailing site name ("Headline | The Herald")."""
    t = html.unescape(text or "").translate(_QUOTES)
    t = re.sub(r"\s+", " ", t).strip()
    for name in site_names:
        if name:
            n = re.escape(name)
            t = re.sub(rf"\s*[|\-:·]+\s*{n}$", "", t, flags=re.I)
            t = re.sub(rf"^{n}\s*[|\-:·]+\s*", "", t, flags=re.I)
    t = _PREFIXES.sub("", t)
    return t.strip(" \"'")


def is_blank(text: str | None) -> bool:
    """None, empty or only whitespace (blank text scores 0.0 against anything)."""
    return not text or not text.strip()


def fuzzy(a: str | None, b: str | None, site_names: tuple[str, ...] = ()) -> float:
    """Token-sort similarity in [0, 1] after normalisation (the seed's headline matcher)."""
    na, nb = normalize_text(a, site_names).lower(), normalize_text(b, site_names).lower()
    if not na or not nb:
        return 0.0
    return fuzz.token_sort_ratio(na, nb) / 100.0


def entities(text: str | None) -> set[str]:
    """Runs of two or more capitalised words ("Alice Porter", "Harbor Council"), any script."""
    out, run = set(), []
    for word in re.findall(r"[^\W\d_][\w'\-]*", normalize_text(text)):
        if word[0].isupper():
            run.append(word)
            continue
        if len(run) >= 2:
            out.add(" ".join(run))
        run = []
    if len(run) >= 2:
        out.add(" ".join(run))
    return out


def entity_overlap(a: str | None, b: str | None) -> tuple[float, int]:
    """Jaccard overlap of entities and the number shared."""
    ea, eb = entities(a), entities(b)
    if not ea or not eb:
        return 0.0, 0
    shared = len(ea & eb)
    return shared / len(ea | eb), shared


def parse_time(value: str | None) -> datetime | None:
    """An aware UTC datetime from an ISO 8601 or free-form timestamp; naive values are UTC."""
    if not value or not isinstance(value, str):
        return None
    try:
        dt = dateparser.parse(value)
    except (ValueError, OverflowError):
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def names_a_date(value: str) -> bool:
    """Whether a timestamp says its day (a bare "16:27" is read as today by the parser)."""
    try:
        a = dateparser.parse(value, default=datetime(1901, 1, 1))
        b = dateparser.parse(value, default=datetime(1902, 2, 2))
    except (ValueError, OverflowError):
        return False
    return a.date() == b.date()


def within(pred: str | None, candidates: list[str], minutes: float) -> tuple[bool, float | None]:
    """Whether `pred` is within `minutes` of any candidate, and the smallest gap in minutes;
    an answer that names no day (a time alone) is never within."""
    p = parse_time(pred)
    if p is None or not names_a_date(pred):
        return False, None
    gaps = [abs((p - t).total_seconds()) / 60 for c in candidates if (t := parse_time(c))]
    if not gaps:
        return False, None
    best = min(gaps)
    return best <= minutes, round(best, 2)
