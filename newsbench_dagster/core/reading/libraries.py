"""What the kept libraries of the field read from the same page: trafilatura's metadata
(title, authors, site name) and htmldate's publication date (the one trafilatura asks for:
original date, extensive search). They are voters beside the page's own signals, never the
last word: `evidence.choose` weighs them with the rest."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

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


def read_with_libraries(text: str, url: str | None) -> LibraryView:
    """trafilatura.extract_metadata on the decoded page (it calls htmldate.find_date with
    original_date=True itself). Raises what the libraries raise; callers guard."""
    from trafilatura import extract_metadata

    meta = extract_metadata(text, default_url=url)
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
