"""What the kept libraries of the field read from the same page: trafilatura's metadata
(title, authors, site name) and htmldate's publication date (the one trafilatura asks for:
original date, extensive search). They are voters beside the page's own signals, never the
last word: `evidence.choose` weighs them with the rest."""

from __future__ import annotations

import logging
import re
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# Both libraries log each page they find odd at WARNING; the record already says what failed.
for _name in ("trafilatura", "htmldate", "courlan"):
    logging.getLogger(_name).setLevel(logging.CRITICAL)

_JAN_FIRST = re.compile(r"\d{4}-01-01$")


@dataclass(frozen=True)
class LibraryView:
    title: str | None = None
    authors: tuple[str, ...] = ()
    sitename: str | None = None
    date: str | None = None  # YYYY-MM-DD
    date_is_year_only: bool = False  # htmldate's "YYYY-01-01" when it found only a year


# htmldate's extensive search hands text to dateparser in every language it knows: loading
# them all costs ~5 s the first time in a process (measured on a 54 KB page). The page's own
# language and English are what its dates are written in.
_LANGUAGES: ContextVar[tuple[str, ...] | None] = ContextVar("page_languages", default=None)
# htmldate's settings for its external parser (htmldate/extractors.py, 1.11).
_DATEPARSER_SETTINGS = {
    "NORMALIZE": True,
    "PARSERS": ["custom-formats", "absolute-time"],
    "PREFER_DATES_FROM": "past",
    "PREFER_LOCALE_DATE_ORDER": True,
    "RETURN_AS_TIMEZONE_AWARE": False,
    "STRICT_PARSING": True,
}


@lru_cache(maxsize=64)
def _date_parser(languages: tuple[str, ...] | None) -> Any:
    from dateparser import DateDataParser

    try:
        return DateDataParser(languages=list(languages) if languages else None,
                              settings=_DATEPARSER_SETTINGS)  # fmt: skip
    except ValueError:  # a language dateparser does not know: all of them, as htmldate does
        return DateDataParser(languages=None, settings=_DATEPARSER_SETTINGS)


def _page_date_parser() -> Any:
    return _date_parser(_LANGUAGES.get())


def read_with_libraries(text: str, url: str | None, language: str | None = None) -> LibraryView:
    """trafilatura.extract_metadata on the decoded page (it calls htmldate.find_date with
    original_date=True itself), htmldate's date parser held to the page's language and
    English. Raises what the libraries raise; callers guard."""
    import htmldate.extractors
    from trafilatura import extract_metadata

    code = (language or "").split("-")[0].lower()
    token = _LANGUAGES.set(tuple(dict.fromkeys([code, "en"])) if code else None)
    # Swapped in for this call only: htmldate used elsewhere in the process stays as shipped.
    original = htmldate.extractors.get_external_parser
    htmldate.extractors.get_external_parser = _page_date_parser
    try:
        meta = extract_metadata(text, default_url=url)
    finally:
        htmldate.extractors.get_external_parser = original
        _LANGUAGES.reset(token)
    if meta is None:
        return LibraryView()
    authors = tuple(a.strip() for a in (meta.author or "").split(";") if a.strip())
    date = meta.date if isinstance(meta.date, str) else None
    return LibraryView(
        title=meta.title or None,
        authors=authors,
        sitename=meta.sitename or None,
        date=date,
        date_is_year_only=bool(date and _JAN_FIRST.match(date)),
    )
