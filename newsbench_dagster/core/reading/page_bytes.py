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


# Labels browsers read as a wider encoding than their name (WHATWG Encoding Standard): a page
# that says gb2312 is decoded as GBK (here GB18030, its superset), latin-1 as windows-1252...
_BROWSER_CODECS = {
    "iso-8859-1": "cp1252", "iso8859-1": "cp1252", "latin1": "cp1252", "latin-1": "cp1252",
    "us-ascii": "cp1252", "ascii": "cp1252", "iso-8859-9": "cp1254", "latin5": "cp1254",
    "iso-8859-11": "cp874", "tis-620": "cp874", "gb2312": "gb18030", "gbk": "gb18030",
    "x-gbk": "gb18030", "gb_2312-80": "gb18030", "cp936": "gb18030", "big5": "big5hkscs",
    "shift_jis": "cp932", "shift-jis": "cp932", "sjis": "cp932", "x-sjis": "cp932",
    "ms_kanji": "cp932", "windows-31j": "cp932", "euc-kr": "cp949", "ks_c_5601-1987": "cp949",
    "euc-jp": "euc_jis_2004", "x-euc-jp": "euc_jis_2004",
}  # fmt: skip
_SINGLE_BYTE = re.compile(
    r"^(?:cp125\d|cp874|iso8859[-_]\d+|latin[-_]1|koi8[-_][ru]|mac[-_]\w+|cp437)$"
)
# Single-byte charsets of other scripts than Latin: a page declared latin-1 whose bytes read
# as one of these is in that script.
_OTHER_SCRIPT = re.compile(
    r"^(?:cp1251|cp1253|cp1255|cp1256|cp874|koi8[-_][ru]|iso8859[-_](?:5|6|7|8|11)|mac[-_]cyrillic)$"
)
_LANG = re.compile(rb"<html[^>]*?\slang\s*=\s*[\"']?([a-zA-Z]{2,3})", re.IGNORECASE)
# Where a Latin single-byte page is windows-1250 rather than windows-1252 (browsers' defaults).
_CENTRAL_EUROPEAN = {"cs", "pl", "hu", "sk", "sl", "hr", "ro", "bs", "sr", "sq"}


def _name(codec: str) -> str:
    return codecs.lookup(codec).name


# A declared charset is kept despite a few invalid bytes (a latin-1 snippet pasted into a UTF-8
# page); past this share of the non-ASCII bytes (and this many), it is a lie: read as found.
LYING_SHARE, LYING_MIN = 0.02, 8
_ASCII = bytes(range(0x80))


def _codec(label: str) -> str | None:
    """A Python codec for a declared charset label, as browsers map it (latin-1 is cp1252)."""
    label = label.strip().strip("\"'").lower()
    if label in _BROWSER_CODECS:
        return _BROWSER_CODECS[label]
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    # An ASCII-readable document cannot really be UTF-16/32 (a BOM would have said so).
    return "utf-8" if name.startswith(("utf-16", "utf-32")) else name


def _strict(data: bytes, codec: str) -> str | None:
    try:
        return data.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None


def _guess(data: bytes) -> str | None:
    """charset-normalizer's reading of bytes that declare nothing true (a codec name). Between
    Latin single-byte charsets it cannot tell apart, the page's language decides, as browsers'
    locale defaults do."""
    best = from_bytes(data[:200_000]).best()
    name = _codec(best.encoding) if best else None
    if name and _SINGLE_BYTE.match(_name(name)) and not _OTHER_SCRIPT.match(_name(name)):
        lang = _LANG.search(data[:4096])
        if lang:
            central = lang.group(1).decode("ascii").lower()[:2] in _CENTRAL_EUROPEAN
            return "cp1250" if central else "cp1252"
        return _latin(data, name)
    return name


# The accented letters each Latin charset's texts are made of, on the bytes where cp1252 and
# cp1250 differ: the reading that gives more of them is the page's ("à" in cp1252 is "ŕ" in
# cp1250, rare in any language; "ř" is "ø"). A tie is charset-normalizer's to break.
_WESTERN = set("àâäáãåçéèêëíìîïñóòôöõúùûüýÿæœßÀÂÄÁÃÅÇÉÈÊËÍÎÏÑÓÒÔÖÕÚÙÛÜÆŒ")
_CENTRAL = set("áäčćďéěíňóôöőřšśťúůüűýžźżąęłńÁÄČĆĎÉĚÍŇÓÔÖŐŘŠŚŤÚŮÜŰÝŽŹŻĄĘŁŃ")


def _latin(data: bytes, guess: str) -> str:
    high = bytes(b for b in data if b > 0x7F)
    west, central = high.decode("cp1252", "replace"), high.decode("cp1250", "replace")
    pairs = [(w, c) for w, c in zip(west, central, strict=False) if w != c]
    w_score = sum(w in _WESTERN for w, _ in pairs)
    c_score = sum(c in _CENTRAL for _, c in pairs)
    if w_score == c_score:
        return "cp1250" if _name(guess) in ("cp1250", "iso8859-2") else "cp1252"
    return "cp1250" if c_score > w_score else "cp1252"


def _contradicted(data: bytes, declared: str) -> str | None:
    """The charset bytes declared single-byte really are in, when they say otherwise: valid
    UTF-8, a CJK encoding, or a single-byte charset of another script (cp1251...)."""
    if data.isascii() or not _SINGLE_BYTE.match(_name(declared)):
        return None
    if _strict(data, "utf-8") is not None:
        return "utf-8"
    other = _guess(data)
    if not other or _name(other) == _name(declared) or _strict(data, other) is None:
        return None
    if not _SINGLE_BYTE.match(_name(other)) or (
        _OTHER_SCRIPT.match(_name(other)) and not _OTHER_SCRIPT.match(_name(declared))
    ):
        return other
    return None


def decode(data: bytes, http_charset: str | None = None) -> tuple[str, str, str | None]:
    """Text, the codec used and a complaint. BOM, then the HTTP header's charset, then the
    page's <meta>, as browsers do; a declaration the bytes contradict is set aside (invalid
    bytes past LYING_SHARE, or a single-byte label on bytes that are clearly UTF-8, CJK or of
    another script), and with none left the charset is detected."""
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if data.startswith(bom):
            return data[len(bom) :].decode(name, "replace"), name, None
    match = _CHARSET.search(data[:4096])
    meta = match.group(1).decode("ascii", "replace") if match else None
    lies: list[str] = []
    for label in (http_charset, meta):
        declared = _codec(label) if label else None
        if not declared:
            continue
        if other := _contradicted(data, declared):
            lies.append(f"{label} (bytes are {other})")
            continue
        try:
            text = data.decode(declared)
        except UnicodeDecodeError as e:
            first_bad = e.start
        else:
            note = f"encoding: declared {', '.join(lies)} set aside" if lies else None
            return text, declared, note
        replaced = data.decode(declared, "replace")
        # One U+FFFD per invalid sequence (a page quoting U+FFFD itself is counted too).
        bad = replaced.count("\ufffd")
        high = len(data.translate(None, _ASCII)) or 1
        if bad / high <= LYING_SHARE or bad < LYING_MIN:
            # Mixed encodings happen (a latin-1 snippet pasted into a UTF-8 page): keep reading.
            note = f"encoding: bytes invalid in declared {declared} replaced (first at {first_bad})"
            return replaced, declared, note
        lies.append(f"{label} ({bad} invalid bytes)")
    text = _strict(data, "utf-8")
    name = "utf-8" if text is not None else (_guess(data) or "utf-8")
    text = text if text is not None else data.decode(name, "replace")
    note = f"encoding: declared {', '.join(lies)} set aside, read as {name}" if lies else None
    return text, name, note


def parse_html(text: str) -> Any:
    """The lxml document of decoded page text (etree.ParserError or ValueError when none)."""
    # Bytes with an explicit encoding: lxml rejects str with an XML declaration, and the
    # page's own <meta charset> must not re-decode what is already decoded.
    parser = lxml.html.HTMLParser(encoding="utf-8", huge_tree=True)
    return lxml.html.document_fromstring(text.encode("utf-8", "replace"), parser=parser)
