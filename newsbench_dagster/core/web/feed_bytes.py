"""The bytes a feed or sitemap arrives as: size limits, gzip (bombs and truncated streams
refused), entity declarations (refused: XML entity bombs), byte-order marks, the charset a
document declares and the one its bytes are in, and UTF-8 XML that lxml and feedparser can
trust."""

from __future__ import annotations

import codecs
import re
import zlib

import charset_normalizer

# Google caps a sitemap at 50 MB uncompressed; nothing legitimate a poller reads is bigger.
MAX_DOCUMENT_BYTES = 50 * 1024 * 1024
MAX_DECOMPRESSED_BYTES = 50 * 1024 * 1024
_MB = 1024 * 1024

BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_XML_DECL = re.compile(rb"^\s*<\?xml[^>]*?>", re.IGNORECASE)
_DECL_ENCODING = re.compile(rb"""encoding\s*=\s*["']([A-Za-z0-9._:\-]+)["']""", re.IGNORECASE)
_HEADER_CHARSET = re.compile(r"charset\s*=\s*[\"']?([A-Za-z0-9._:\-]+)", re.IGNORECASE)


def too_big(what: str, size: int) -> str:
    return f"{what} is {size / _MB:.1f} MB, over the {MAX_DOCUMENT_BYTES // _MB} MB limit"


def gunzip(content: bytes) -> tuple[bytes, str | None]:
    """Inflate a gzip body (a .xml.gz sitemap), refusing bombs and truncated streams."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(content, MAX_DECOMPRESSED_BYTES + 1)
    except zlib.error as e:
        return b"", f"corrupt gzip: {e}"
    if len(out) > MAX_DECOMPRESSED_BYTES:
        limit = MAX_DECOMPRESSED_BYTES // _MB
        return b"", f"decompressed size exceeds {limit} MB (gzip bomb?)"
    if not inflater.eof:
        return b"", f"truncated gzip: stream ends after {len(content)} bytes"
    return out, None


# Scanned left to right, comments and CDATA sections are whole tokens (an unclosed one runs
# to the end: still one token, so the scan stays linear), so "<!ENTITY" quoted in an article
# is not a declaration, while one anywhere else is.
_DECLARATIONS = re.compile(
    rb"<!--.*?(?:-->|\Z)|<!\[CDATA\[.*?(?:\]\]>|\Z)|<!ENTITY", re.S | re.IGNORECASE
)


def entity_declarations(body: bytes) -> str | None:
    """Why a document that declares XML entities is refused, or None. An entity declared in
    the DOCTYPE and repeated ("billion laughs", or one 100 KB entity used 10,000 times) makes
    gigabytes of text from a few KB: feedparser's fallback parser expands such entities
    whatever expat's own limit says, and lxml runs out of memory. No feed or sitemap needs
    one, so the document is refused before any XML parser sees it. `body` is UTF-8 (after
    `utf8_xml`), so a UTF-16 document cannot hide its declarations."""
    for m in _DECLARATIONS.finditer(body):
        if m.group(0).upper() == b"<!ENTITY":
            return (
                f"entity declarations refused: the DOCTYPE declares an entity (byte {m.start()}),"
                " which can expand to gigabytes (an XML entity bomb?)"
            )
    return None


def strip_bom(content: bytes) -> bytes:
    for bom, _ in BOMS:
        if content.startswith(bom):
            return content[len(bom) :]
    return content


def header_charset(headers: dict[str, str] | None) -> str | None:
    """The charset the HTTP Content-Type (lower-cased headers) declares."""
    m = _HEADER_CHARSET.search((headers or {}).get("content-type", ""))
    return m.group(1) if m else None


def declared_charset(content: bytes, headers: dict[str, str] | None) -> str | None:
    """The charset a document claims: a BOM, then HTTP Content-Type, then the XML declaration."""
    for bom, name in BOMS:
        if content.startswith(bom):
            return name
    if charset := header_charset(headers):
        return charset
    if (decl := _XML_DECL.match(content)) and (m := _DECL_ENCODING.search(decl.group(0))):
        return m.group(1).decode("ascii")
    return None


def decode_text(content: bytes, headers: dict[str, str] | None) -> tuple[str, str | None]:
    """The document as text, and a note when its declared charset had to be overridden.

    Publishers declare UTF-8 and serve windows-1252, or declare nothing at all; such titles
    must still come out readable, so charset-normalizer guesses when the declaration fails.
    """
    declared = declared_charset(content, headers)
    if declared and _is_western_single_byte(declared) and not content.isascii():
        # Latin-1 never fails to decode, so a UTF-8 feed labelled latin-1 would come out as
        # "Ã©"; non-ASCII bytes that are valid UTF-8 are almost never really latin-1.
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            note = f"declared {declared} but the bytes are UTF-8: decoded as utf-8"
            return text.removeprefix("\ufeff"), note
    try:
        text = content.decode(declared or "utf-8")
    except (UnicodeDecodeError, LookupError):
        text = None
    if text is not None and "\ufffd" not in text:
        return text.removeprefix("\ufeff"), None
    guess = _guess_charset(content)
    guessed = content.decode(guess, "replace")
    if text is not None and "\ufffd" in text and "\ufffd" in guessed:
        return text.removeprefix("\ufeff"), "text contains U+FFFD replacement characters"
    said = f"declared {declared}" if declared else "no charset declared"
    return guessed.removeprefix("\ufeff"), (
        f"{said} but the bytes are not {declared or 'utf-8'}: decoded as {guess}"
    )


def _is_western_single_byte(charset: str) -> bool:
    try:
        return codecs.lookup(charset).name in ("iso8859-1", "cp1252", "iso8859-15")
    except LookupError:
        return False


def _guess_charset(content: bytes) -> str:
    """charset-normalizer's guess, except that among equally plausible single-byte charsets
    windows-1252 wins: it is what mislabelled Western feeds are in (and what WHATWG reads
    "latin-1" as), while cp1250 would turn "à" into "ŕ"."""
    matches = list(charset_normalizer.from_bytes(content))
    if not matches:
        return "cp1252"
    best = min(m.chaos for m in matches)
    for m in matches:
        if m.chaos <= best + 0.01 and "cp1252" in m.could_be_from_charset:
            return "cp1252"
    return matches[0].encoding


def utf8_xml(content: bytes, headers: dict[str, str] | None) -> tuple[bytes, str | None]:
    """UTF-8 bytes whose XML declaration says so (what lxml and feedparser then trust)."""
    declared = (declared_charset(content, headers) or "utf-8").lower().replace("_", "-")
    if declared in ("utf-8", "utf8"):
        try:
            if "\ufffd" not in content.decode("utf-8"):
                return content, None  # the common case: nothing to repair
        except UnicodeDecodeError:
            pass
    text, note = decode_text(content, headers)
    body = text.encode("utf-8")
    if decl := _XML_DECL.match(body):
        fixed = _DECL_ENCODING.sub(b'encoding="utf-8"', decl.group(0), count=1)
        body = fixed + body[decl.end() :]
    return body, note
