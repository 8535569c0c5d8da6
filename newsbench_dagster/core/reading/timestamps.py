"""When a page was published and modified: machine-readable timestamps (JSON-LD, meta tags,
microdata, <time datetime>) read by python-dateutil, and human-readable dates in the page's
language ("30. November 2026, 15:04 Uhr") read by dateparser."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from dateutil import parser as dateutil_parser

from newsbench_dagster.core.reading.evidence import STRONG, Vote, choose
from newsbench_dagster.core.reading.libraries import guess_languages
from newsbench_dagster.core.reading.page_reader import PageReader, clean, first, visible_text
from newsbench_dagster.core.reading.page_record import Timestamp

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
    """A human-readable date in the page's language (dateparser, imported here: it costs
    ~0.3 s a process, and most pages date themselves in structured data)."""
    text = clean(raw)[:200]
    if not _YEAR.search(text):
        return None
    import dateparser
    from dateparser.search import search_dates

    languages = [language.split("-")[0]] if language else None
    # Then the languages of the date's own script: every language dateparser knows cost
    # 5.5 s on the first call in a process (206 locales' patterns compiled).
    guessed = list(guess_languages(text, letters_needed=1))
    for langs in [languages, guessed] if languages else [guessed]:
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


# Meta tags that name a publication date beside OpenGraph's (lower-cased by `r.meta_ci`).
_PUBLISHED_META = (
    "article:published_time", "og:published_time", "pubdate", "publishdate", "publish-date",
    "published-date", "date", "dc.date", "dc.date.issued", "dcterms.created", "dcterms.issued",
    "sailthru.date", "parsely-pub-date", "citation_publication_date", "article.published",
    "datepublished", "release_date",
)  # fmt: skip
# How far each signal is trusted (evidence.choose): structured data most, then htmldate (which
# weighs URL, header, JSON and text itself), then <time>, then a date read from visible text.
PUBLISHED_WEIGHTS = {
    "jsonld:datePublished": 3.0,
    "microdata:datePublished": 3.0,
    "meta:article:published_time": 3.0,
    "meta": 2.5,
    "itemprop:datePublished": 2.5,
    "htmldate": 2.5,
    "time[datetime]:published": 2.5,
    "time[datetime]": 2.0,
    "text": 1.5,
    "htmldate:year-only": 0.5,  # htmldate's YYYY-01-01 when it found only a year
}
SAME_DAY_HOURS = 24


def same_day(a: Timestamp, b: Timestamp) -> bool:
    """Two readings of one publication: at most a day apart (a date without a zone, or a date
    without a time, is a day wide)."""
    return abs((a.utc - b.utc).total_seconds()) <= SAME_DAY_HOURS * 3600


def _library_date(r: PageReader) -> Vote | None:
    view = r.libraries
    stamp = machine_time(view.date, "htmldate") if view.date else None
    if stamp is None:
        return None
    source = "htmldate:year-only" if view.date_is_year_only else "htmldate"
    return Vote(stamp, source, PUBLISHED_WEIGHTS[source])


def _text_dates(r: PageReader, language: str | None) -> Timestamp | None:
    """A human-readable date: <time> text, then elements whose class says "date"."""
    texts = [visible_text(t) for t in r.time_elements]
    texts += [
        visible_text(e)
        for e in r.doc.xpath(
            "//*[contains(@class, 'date') or contains(@class, 'datum') "
            "or contains(@class, 'dateline')][not(self::meta)]"
        )[:20]
    ]
    for text in texts:
        if text and (stamp := human_time(text, language, "text")):
            return stamp
    return None


def read_published(
    r: PageReader, article: dict, og: dict, mprops: dict, language: str | None
) -> Timestamp | None:
    """Every signal's publication date, voted on (`evidence.choose`, weights above): JSON-LD,
    microdata, meta tags, <time datetime> (those labelled "published" first), htmldate, and a
    human-readable date in <time> text or an element whose class says "date"."""
    times = r.time_elements
    labelled = [
        t.get("datetime")
        for t in times
        if re.search(r"publish|created", f"{t.get('class')} {t.get('itemprop')}", re.I)
    ]
    itemprop = r.doc.xpath(
        "//*[@itemprop='datePublished']/@content | //*[@itemprop='datePublished']/@datetime"
    )
    raw: list[tuple[str, str, Any]] = [
        ("jsonld:datePublished", "jsonld:datePublished", article.get("datePublished")),
        ("meta:article:published_time", "meta:article:published_time",
         og.get("article:published_time")),
        ("microdata:datePublished", "microdata:datePublished", mprops.get("datePublished")),
        *((f"meta:{name}", "meta", first(r.meta_ci(name))) for name in _PUBLISHED_META),
        *(("itemprop:datePublished", "itemprop:datePublished", v) for v in itemprop[:1]),
        *(("time[datetime]", "time[datetime]:published", v) for v in labelled[:1]),
        *(("time[datetime]", "time[datetime]", t.get("datetime")) for t in times[:1]),
    ]  # fmt: skip
    votes = [
        Vote(stamp, source, PUBLISHED_WEIGHTS[kind])
        for source, kind, value in raw
        if value and (stamp := machine_time(value, source))
    ]
    library = _library_date(r)
    # A date in words costs dateparser ~1 s the first time in a process: read one only when
    # no strong signal with a time (structured data; htmldate gives only the day) named it.
    strong = any(v.weight >= STRONG for v in votes)
    if not strong and (text := _text_dates(r, language)):
        votes.append(Vote(text, "text", PUBLISHED_WEIGHTS["text"]))
    # Last: htmldate gives a day without a time, so any other reading of that day is written.
    if library:
        votes.append(library)
    return r.chose("published", choose(votes, same_day))


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
