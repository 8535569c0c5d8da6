"""Secrets kept out of everything a run leaves behind: one redaction pass, one module.

A `Redactor` is built from the secret values in play (name -> value: an agent's `${NAME}`
environment references, a model endpoint's key, a collector's headers) and replaces each
value, and each of its common encodings, with `[redacted:NAME]`:

* as is, and JSON-escaped (once and twice: JSON inside a JSON string), HTML-escaped, hex
  (lower and upper case);
* URL-encoded: `quote` (with and without `/` safe), `quote_plus`, the WHATWG sets a browser
  applies itself to a typed URL's query and path (it leaves `+/=&` as they are), upper- and
  lower-case escapes; and read back as a form value (`+` as a space, escapes decoded);
* base64, standard and URL-safe, whole (with and without padding) and as a substring of a
  longer base64 text: the stable core of each of the three byte alignments (the characters
  that depend only on the secret's bytes; at most two characters either side stay).

Values shorter than `MIN_SECRET_CHARS` are refused as secrets, with a warning: replacing
"abc" everywhere would destroy text while protecting nothing.

The harness applies it once per sink (core.harness.capture): the run row before it is
returned (so the warehouse, Dagster's log and the CLI only ever see the redacted row; the
spans are built from that row), and every artifact written through `RedactingStore`
(trace.zip: its text members rewritten; images are left as they are).
"""

from __future__ import annotations

import base64
import html
import io
import json
import logging
import re
import zipfile
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from functools import lru_cache
from urllib.parse import quote, quote_plus, unquote, unquote_plus

MIN_SECRET_CHARS = 6
# Files whose bytes are pixels or fonts: redacting them would corrupt them, and a text match
# in them would be a coincidence. Anything else in a zip (a Playwright trace's events,
# network log, HTML/JSON/CSS resources) is text to redact.
BINARY_SUFFIXES = (
    ".png",
    ".jpg",
    ".jpeg",
    ".webp",
    ".gif",
    ".avif",
    ".ico",
    ".bmp",
    ".woff",
    ".woff2",
    ".ttf",
    ".otf",
)
# What a browser percent-encodes by itself (WHATWG URL: the query and path percent-encode
# sets, the special-scheme query adding '); everything else printable stays as typed.
_QUERY_ENCODED = ' "#<>' + "'"
_PATH_ENCODED = ' "#<>?`{}'
_PRINTABLE = "".join(chr(c) for c in range(0x21, 0x7F))
_ESCAPE = re.compile(r"%[0-9A-F]{2}")

log = logging.getLogger(__name__)
_warned: set[str] = set()


def marker(name: str) -> str:
    return f"[redacted:{name}]"


def _b64_cores(data: bytes) -> set[str]:
    """The base64 characters that depend only on `data`, wherever `data` sits in a longer
    byte string: one core per alignment (0, 1 or 2 bytes before it, modulo 3)."""
    cores = set()
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + data).decode()
        first = -(-pad * 8 // 6)  # the first character whose 6 bits all come from `data`
        last = (pad + len(data)) * 8 // 6  # one past the last such character
        core = encoded[first:last]
        if len(core) >= 6:
            cores.add(core)
    return cores


@lru_cache(maxsize=256)
def variants(value: str) -> frozenset[str]:
    """The value and its common encodings (this module's docstring)."""
    raw = value.encode()
    json_once = json.dumps(value)[1:-1]
    out = {
        value,
        json_once,
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(json_once)[1:-1],
        json_once.replace("/", "\\/"),
        html.escape(value),
        html.escape(value, quote=False),
        html.escape(value).replace("&#x27;", "&#39;"),
        raw.hex(),
        raw.hex().upper(),
        quote(value, safe=""),
        quote(value),
        quote_plus(value),
        quote_plus(value, safe=""),
        quote(value, safe="".join(c for c in _PRINTABLE if c not in _QUERY_ENCODED)),
        quote(value, safe="".join(c for c in _PRINTABLE if c not in _PATH_ENCODED)),
    }
    # Typed as is into a URL and read back as a form value ('+' is a space then, as in a
    # HAR's queryString); base64 too.
    out |= {unquote_plus(value), unquote(value)}
    for whole in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
        out |= {whole, whole.rstrip("="), whole.replace("+", " ")}
    for core in _b64_cores(raw):
        urlsafe = core.translate(str.maketrans("+/", "-_"))
        out |= {core, urlsafe, quote(core, safe=""), core.replace("+", " ")}
    # Percent-escapes in lower case too (%2f): some encoders write them so.
    out |= {_ESCAPE.sub(lambda m: m.group().lower(), v) for v in out}
    return frozenset(v for v in out if len(v) >= MIN_SECRET_CHARS)


class Redactor:
    """Replaces configured secret values, and their encodings, with `[redacted:NAME]`.

    Falsy when it has nothing to redact, so callers can skip work (a trace's rewrite)."""

    def __init__(self, secrets: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        items = secrets.items() if isinstance(secrets, Mapping) else secrets
        self.names: list[str] = []
        self.refused: list[str] = []  # names whose values are too short to be secrets
        pairs: dict[str, str] = {}  # variant -> marker; a value under two names: the first
        seen: set[str] = set()
        for name, value in items:
            if not value or value in seen:
                continue
            if len(value) < MIN_SECRET_CHARS:
                self.refused.append(name)
                if name not in _warned:
                    _warned.add(name)
                    log.warning(
                        "secret %s is shorter than %d characters: not redacted (it would "
                        "destroy text without protecting anything); use a real secret",
                        name,
                        MIN_SECRET_CHARS,
                    )
                continue
            seen.add(value)
            self.names.append(name)
            for v in variants(value):
                pairs.setdefault(v, marker(name))
        # Longest first: a value's encoding that contains another variant goes whole.
        self._text = sorted(pairs.items(), key=lambda kv: len(kv[0]), reverse=True)
        self._bytes = [(v.encode(), m.encode()) for v, m in self._text]

    def __bool__(self) -> bool:
        return bool(self._text)

    def __repr__(self) -> str:  # never the values
        return f"Redactor(names={self.names!r})"

    def text(self, text: str) -> str:
        for secret, mark in self._text:
            if secret in text:
                text = text.replace(secret, mark)
        return text

    def bytes(self, data: bytes) -> bytes:
        for secret, mark in self._bytes:
            if secret in data:
                data = data.replace(secret, mark)
        return data

    def value(self, value):
        """A JSON-like value (a row, nested dicts and lists) with every string redacted,
        keys included; numbers, booleans, times are kept; any other object is kept unless
        its text holds a secret (then its redacted text)."""
        if not self:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, tuple):  # a named tuple too: JSON writes it as a list anyway
            return tuple(self.value(v) for v in value)
        if isinstance(value, bytes):
            return self.bytes(value)
        if value is None or isinstance(value, bool | int | float | datetime | date):
            return value
        text = str(value)
        clean = self.text(text)
        return value if clean == text else clean

    def zip(self, data: bytes) -> bytes:
        """A zip (a Playwright trace) with its text members redacted; images and fonts
        kept as they are. The original bytes when nothing in it needed redacting."""
        if not self:
            return data
        src = zipfile.ZipFile(io.BytesIO(data))
        members = []
        changed = False
        for info in src.infolist():
            body = src.read(info)
            if not info.filename.lower().endswith(BINARY_SUFFIXES):
                clean = self.bytes(body)
                changed = changed or clean != body
                body = clean
            members.append((info, body))
        if not changed:
            return data
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as dst:
            for info, body in members:
                dst.writestr(info, body, compress_type=info.compress_type)
        return out.getvalue()


class RedactingStore:
    """An artifact store that redacts what is written through it: JSON values and text
    files by content, zips (traces) member by member, images as they are (pixels are not
    text: a secret rendered in a screenshot stays in it). Reads pass through."""

    def __init__(self, store, redactor: Redactor) -> None:
        self.inner = store
        self.redactor = redactor

    def __getattr__(self, name: str):  # uri, get, read_json, root, ...: the store's own
        return getattr(self.inner, name)

    def put(self, key: str, data: bytes) -> str:
        lowered = key.lower()
        if lowered.endswith(".zip"):
            try:
                data = self.redactor.zip(data)
            except zipfile.BadZipFile:
                data = self.redactor.bytes(data)
        elif not lowered.endswith(BINARY_SUFFIXES):
            data = self.redactor.bytes(data)
        return self.inner.put(key, data)

    def put_json(self, key: str, value: object) -> str:
        return self.inner.put_json(key, self.redactor.value(value))


def redacting(store, redactor: Redactor):
    """`store` itself when there is nothing to redact, else a `RedactingStore` over it."""
    if not redactor:
        return store
    if isinstance(store, RedactingStore):
        store = store.inner
    return RedactingStore(store, redactor)
