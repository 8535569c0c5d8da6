"""What never reaches a recording: headers that say who the reader is, and credential-like
or e-mail values in URLs and request bodies (redacted, counted, never kept). Replay keys
live requests through the same functions, so a redacted value still matches its recording.
"""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# Headers that carry who the reader is: never recorded.
SECRET_HEADERS = frozenset(
    {
        "cookie",
        "set-cookie",
        "set-cookie2",
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "x-auth-token",
        "x-csrf-token",
        "x-xsrf-token",
    }
)
# Query parameters whose value is a credential or identifies the reader.
_SECRET_PARAM = re.compile(
    r"(token|secret|passw|api[_-]?key|apikey|session|sessid|signature|credential"
    r"|^(sid|sig|key)$|(^|[_-])auth($|[_-]|orization))",
    re.I,
)  # "auth" as a word of the name only: `author` is content, not a credential
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
REDACTED = "redacted"


def _secret(key: str, value) -> bool:
    """Whether a named string value is a credential or personal data (a value this module
    already redacted is neither: the audit must pass what the recorder wrote)."""
    if not value or value == REDACTED:
        return False
    return bool(_SECRET_PARAM.search(key) or _EMAIL.search(value))


def _clean_query(query: str) -> tuple[str, int]:
    """A query string (or form body) with its secret values redacted, re-encoded only when
    one was; and how many were."""
    pairs, n = [], 0
    for k, v in parse_qsl(query, keep_blank_values=True):
        if _secret(k, v):
            v, n = REDACTED, n + 1
        pairs.append((k, v))
    return (urlencode(pairs) if n else query), n


def clean_url(url: str) -> tuple[str, int]:
    """The URL with credential-like query values and e-mail addresses redacted; and how
    many values were."""
    parts = urlsplit(url)
    if not parts.query:
        return url, 0
    query, n = _clean_query(parts.query)
    return (urlunsplit(parts._replace(query=query)) if n else url), n


def clean_body(body: bytes | None) -> tuple[bytes, int]:
    """A request body with personal data and credentials redacted (form fields and JSON
    values named like a secret, and e-mail addresses anywhere); and how many values were."""
    if not body:
        return b"", 0
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return body, 0  # binary uploads are kept as sent
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            doc = json.loads(stripped)
        except ValueError:
            doc = None
        if doc is not None:
            count = [0]

            def walk(v, key=""):
                if isinstance(v, dict):
                    return {k: walk(x, k) for k, x in v.items()}
                if isinstance(v, list):
                    return [walk(x, key) for x in v]
                if isinstance(v, str) and _secret(key, v):
                    count[0] += 1
                    return REDACTED
                return v

            cleaned = walk(doc)
            return (json.dumps(cleaned).encode() if count[0] else body), count[0]
    if "=" in text and " " not in stripped:
        form, n = _clean_query(text)
        return (form.encode() if n else body), n
    cleaned, n = _EMAIL.subn(REDACTED, text)
    return (cleaned.encode() if n else body), n
