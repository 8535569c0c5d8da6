"""What the kept libraries of the field read from the same page: trafilatura's metadata
(title, authors, site name) and htmldate's publication date (the one trafilatura asks for:
original date, extensive search). They are voters beside the page's own signals, never the
last word: `evidence.choose` weighs them with the rest."""

from __future__ import annotations

import html
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
# A page that names no language: the languages of the script most of its letters are in
# (Unicode blocks; the first with SCRIPT_LETTERS letters wins), else the main Latin-script
# ones. Loading every language instead cost 12.9 s on a 20 KB Japanese page without a lang.
SCRIPT_LETTERS = 10
_SCRIPTS = (
    (re.compile(r"[\u3040-\u30ff]"), ("ja", "en")),  # kana: Japanese
    (re.compile(r"[\uac00-\ud7af]"), ("ko", "en")),  # hangul
    (re.compile(r"[\u4e00-\u9fff]"), ("zh", "en")),  # Han without kana: Chinese
    (re.compile(r"[\u0400-\u04ff]"), ("ru", "uk", "bg", "en")),  # Cyrillic
    (re.compile(r"[\u0600-\u06ff]"), ("ar", "fa", "ur", "en")),  # Arabic
    (re.compile(r"[\u0370-\u03ff]"), ("el", "en")),  # Greek
    (re.compile(r"[\u0590-\u05ff]"), ("he", "en")),  # Hebrew
    (re.compile(r"[\u0e00-\u0e7f]"), ("th", "en")),  # Thai
    (re.compile(r"[\u0900-\u097f]"), ("hi", "en")),  # Devanagari
)
_LATIN = (
    "en", "de", "fr", "es", "it", "pt", "nl", "pl", "cs", "sk", "sv", "da", "nb", "fi", "hu",
    "ro", "hr", "sl", "tr", "id", "ca", "vi", "lt", "lv", "et",
)  # fmt: skip


def guess_languages(text: str, letters_needed: int = SCRIPT_LETTERS) -> tuple[str, ...]:
    """The languages a text's dates are likely written in, from the script of its letters
    (character references decoded: some pages write every letter as `&#x5E74;`)."""
    shown = html.unescape(text[:200_000])
    for letters, languages in _SCRIPTS:
        if len(letters.findall(shown)) >= letters_needed:
            return languages
    return _LATIN


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
    English (or, where the page names none, to its script's: `guess_languages`). Raises what
    the libraries raise; callers guard."""
    import htmldate.extractors
    from trafilatura import extract_metadata

    code = (language or "").split("-")[0].lower()
    token = _LANGUAGES.set(tuple(dict.fromkeys([code, "en"])) if code else guess_languages(text))
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
