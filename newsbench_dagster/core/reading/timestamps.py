"""When a page was published and modified: machine-readable timestamps (JSON-LD, meta tags,
microdata, <time datetime>) read by python-dateutil, and human-readable dates in the page's
language ("30. November 2026, 15:04 Uhr") when the optional `dateparser` is installed."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from dateutil import parser as dateutil_parser

from newsbench_dagster.core.reading.page_reader import PageReader, clean, first, visible_text
from newsbench_dagster.core.reading.page_record import Timestamp

try:  # optional: human-readable dates in the page's language ("30. November 2026, 15:04 Uhr")
    import dateparser
    from dateparser.search import search_dates
except ImportError:  # pragma: no cover - exercised only where dateparser is not installed
    dateparser = None
    search_dates = None

_YEAR = re.compile(r"\d{4}")


def _offset(dt: datetime) -> str | None:
    delta = dt.utcoffset()
    if delta is None:
        return None
    minutes = int(delta.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _stamp(dt: datetime, raw: str, source: str) -> Timestamp | None:
    try:
        offset = _offset(dt)
        utc = dt.astimezone(UTC) if dt.tzinfo else dt.replace(tzinfo=UTC)
    except (OverflowError, ValueError):
        return None
    return Timestamp(utc=utc, raw=raw, offset=offset, source=source)


def machine_time(raw: Any, source: str) -> Timestamp | None:
    """A machine-readable timestamp (ISO 8601 and the like) read by dateutil; None if unreadable."""
    text = clean(raw if isinstance(raw, str) else first(raw))
    if not text or not any(ch.isdigit() for ch in text):
        return None
    try:
        dt = dateutil_parser.isoparse(text)
    except (ValueError, OverflowError):
        try:
            dt = dateutil_parser.parse(text)
        except (ValueError, OverflowError, TypeError):
            return None
    return _stamp(dt, text, source)


def human_time(raw: str, language: str | None, source: str) -> Timestamp | None:
    """A human-readable date in the page's language, if dateparser is installed."""
    text = clean(raw)[:200]
    if dateparser is None or not _YEAR.search(text):
        return None
    languages = [language.split("-")[0]] if language else None
    for langs in [languages, None] if languages else [None]:
        try:
            dt = dateparser.parse(text, languages=langs)
            if dt is None:
                found = search_dates(text, languages=langs) or []
                # Relative dates ("vor 2 Stunden") depend on when the page was saved: want a year.
                found = [(s, d) for s, d in found if _YEAR.search(s)]
                dt = found[0][1] if found else None
        except Exception:  # dateparser raises assorted errors on unsupported languages/input
            dt = None
        if dt is not None:
            return _stamp(dt, text, source)
    return None


def _first_time(
    r: PageReader, field_name: str, candidates: Iterable[tuple[str, Any]]
) -> Timestamp | None:
    for source, value in candidates:
        if value and (stamp := machine_time(value, source)):
            r.sources[field_name] = source
            return stamp
    return None


def read_published(
    r: PageReader, article: dict, og: dict, mprops: dict, language: str | None
) -> Timestamp | None:
    """Structured data first, then <time datetime> (those labelled "published" first), then
    human-readable dates in <time> text and in elements whose class says "date"."""
    times = r.time_elements
    labelled = [
        t.get("datetime")
        for t in times
        if re.search(r"publish|created", f"{t.get('class')} {t.get('itemprop')}", re.I)
    ]
    stamp = _first_time(
        r,
        "published",
        [
            ("jsonld:datePublished", article.get("datePublished")),
            ("meta:article:published_time", og.get("article:published_time")),
            ("microdata:datePublished", mprops.get("datePublished")),
            *(("time[datetime]", v) for v in labelled),
            *(("time[datetime]", t.get("datetime")) for t in times),
        ],
    )
    if stamp:
        return stamp
    # Human-readable dates only: <time> text, then elements whose class says "date".
    texts = [visible_text(t) for t in times]
    texts += [
        visible_text(e)
        for e in r.doc.xpath(
            "//*[contains(@class, 'date') or contains(@class, 'datum') "
            "or contains(@class, 'dateline')][not(self::meta)]"
        )[:20]
    ]
    for text in texts:
        if text and (stamp := human_time(text, language, "text")):
            r.sources["published"] = "text"
            return stamp
    return None


def read_modified(r: PageReader, article: dict, og: dict, mprops: dict) -> Timestamp | None:
    """Structured data first, then a <time datetime> labelled as an update."""
    labelled = [
        t.get("datetime")
        for t in r.time_elements
        if re.search(r"modif|updat|aktualisiert", f"{t.get('class')} {t.get('itemprop')}", re.I)
    ]
    return _first_time(
        r,
        "modified",
        [
            ("jsonld:dateModified", article.get("dateModified")),
            ("meta:article:modified_time", og.get("article:modified_time")),
            ("meta:og:updated_time", og.get("og:updated_time")),
            ("microdata:dateModified", mprops.get("dateModified")),
            *(("time[datetime]", v) for v in labelled),
        ],
    )
