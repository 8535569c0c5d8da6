"""Text helpers for generated copy and URLs: slugs and sentence capitalisation."""

from __future__ import annotations

import re
import unicodedata

# German and Nordic letters that NFKD would otherwise drop or mangle.
_TRANSLIT = str.maketrans(
    {"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss", "ı": "i", "æ": "ae", "œ": "oe", "ø": "o"}
)


def slugify(text: str, max_len: int = 60) -> str:
    """ASCII, lower-case, hyphenated; cut on a word boundary so URLs stay readable."""
    text = unicodedata.normalize("NFKD", text.lower().translate(_TRANSLIT))
    text = text.encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", text)
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > max_len:
            break
        slug = candidate
    return slug or "story"


def capitalise(text: str) -> str:
    """Upper-case the first letter only (French subjects start with an article: 'la maire ...')."""
    return text[:1].upper() + text[1:]
