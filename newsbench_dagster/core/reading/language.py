"""A page's language as a BCP-47 tag, from <html lang>, og:locale or JSON-LD inLanguage."""

from __future__ import annotations

import re
from typing import Any

from newsbench_dagster.core.reading.page_reader import PageReader, first

_LANG = re.compile(r"^[a-z]{2,3}(?:-[a-z0-9]{2,8})*$", re.IGNORECASE)


def bcp47(tag: Any) -> str | None:
    """ "de_DE" / "EN-us" / "fr-ca" -> "de-DE" / "en-US" / "fr-CA"; None if not a language tag."""
    if not isinstance(tag, str) or not _LANG.match(tag.strip().replace("_", "-")):
        return None
    parts = tag.strip().replace("_", "-").split("-")
    out = [parts[0].lower()]
    for p in parts[1:]:
        if len(p) == 2 or (len(p) == 3 and p.isdigit()):
            out.append(p.upper())  # region
        elif len(p) == 4 and p.isalpha():
            out.append(p.title())  # script
        else:
            out.append(p.lower())
    return "-".join(out)


def read_language(r: PageReader, og: dict, article: dict) -> str | None:
    """The first of <html lang>, og:locale, JSON-LD inLanguage that is a language tag."""
    in_language = article.get("inLanguage")
    if isinstance(in_language, dict):
        in_language = in_language.get("alternateName") or in_language.get("name")
    for source, value in (
        ("html[lang]", r.doc.get("lang") or r.doc.get("xml:lang")),
        ("og:locale", og.get("og:locale")),
        ("jsonld", first(in_language)),
    ):
        if tag := bcp47(value):
            r.sources["language"] = source
            return tag
    return None
