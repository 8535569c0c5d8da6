"""From what a server returned to a parsed HTML tree: saying what the input is when it is
clearly not a page (an image, JSON, a feed), decoding bytes in their charset, parsing."""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

import lxml.html
from charset_normalizer import from_bytes

_CHARSET = re.compile(rb"<meta[^>]+?charset\s*=\s*[\"']?\s*([a-zA-Z0-9_.:-]+)", re.IGNORECASE)
_HTML_HINT = re.compile(
    r"<(?:!doctype\s+html|html|head|body|title|meta|main|article|div|p|h[1-6])\b", re.IGNORECASE
)
# A comment is matched up to its own `-->` only: `<!--.*?-->` could also run on over the next
# comments, and a page with a few dozen of them took exponential time to reject.
_XML_ROOT = re.compile(
    r"(?:<\?xml[^>]*>\s*)?(?:<!--(?:(?!-->).)*-->\s*)*<(?:rss|feed|urlset|sitemapindex|rdf:RDF)\b",
    re.S,
)
# Leading bytes of what servers hand out in place of a page or a feed (also read by feeds).
BINARY_MAGIC = {
    b"\x89PNG": "PNG image",
    b"%PDF": "PDF document",
    b"GIF8": "GIF image",
    b"\xff\xd8\xff": "JPEG image",
    b"PK\x03\x04": "ZIP archive",
    b"\x1f\x8b": "gzip stream",
    b"RIFF": "RIFF media file",
}


def sniff_non_html(data: bytes | str) -> str | None:
    """What the input is when it is clearly not an HTML page ("PNG image", "empty"), else None."""
    head = data[:4096] if isinstance(data, bytes) else data[:4096].encode("utf-8", "replace")
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not stripped:
        return "empty"
    for prefix, what in BINARY_MAGIC.items():
        if stripped.startswith(prefix):
            return what
    if stripped[:1] in (b"{", b"["):
        try:
            json.loads(data)
            return "JSON"
        except ValueError:
            pass
    if b"\x00" in head and not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "binary data"
    text = data[:65536] if isinstance(data, str) else decode(data[:65536])[0]
    if _XML_ROOT.match(text.lstrip("\ufeff \t\r\n")):
        return "XML feed or sitemap"
    if not _HTML_HINT.search(text):
        return "no HTML markup"
    return None


def _codec(label: str) -> str | None:
    """A Python codec for a declared charset label, as browsers map it (latin-1 is cp1252)."""
    label = label.strip().lower()
    if label in ("iso-8859-1", "iso8859-1", "latin1", "latin-1", "us-ascii", "ascii"):
        return "cp1252"
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    # An ASCII-readable document cannot really be UTF-16/32 (a BOM would have said so).
    return "utf-8" if name.startswith(("utf-16", "utf-32")) else name


def decode(data: bytes, http_charset: str | None = None) -> tuple[str, str, str | None]:
    """Text, the codec used and a complaint: BOM, then the declared charset, then a guess."""
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if data.startswith(bom):
            return data[len(bom) :].decode(name, "replace"), name, None
    match = _CHARSET.search(data[:4096])
    declared = _codec(match.group(1).decode("ascii", "replace")) if match else None
    if declared:
        try:
            return data.decode(declared), declared, None
        except UnicodeDecodeError as e:
            # Mixed encodings happen (a latin-1 snippet pasted into a UTF-8 page): keep reading.
            note = f"encoding: bytes invalid in declared {declared} replaced (first at {e.start})"
            return data.decode(declared, "replace"), declared, note
    try:
        return data.decode("utf-8"), "utf-8", None
    except UnicodeDecodeError:
        pass
    best = from_bytes(data[:200_000]).best()
    name = best.encoding if best else "utf-8"
    return data.decode(name, "replace"), name, None


def parse_html(text: str) -> Any:
    """The lxml document of decoded page text (etree.ParserError or ValueError when none)."""
    # Bytes with an explicit encoding: lxml rejects str with an XML declaration, and the
    # page's own <meta charset> must not re-decode what is already decoded.
    parser = lxml.html.HTMLParser(encoding="utf-8", huge_tree=True)
    return lxml.html.document_fromstring(text.encode("utf-8", "replace"), parser=parser)
