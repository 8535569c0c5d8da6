"""Finding a secret wherever a run may have left it: a test's own list of the encodings a
secret travels in (not the redactor's, so a gap in one is not the other's blind spot), and
a scan of text, files and zips (traces) for any of them."""

from __future__ import annotations

import base64
import html
import json
import zipfile
from pathlib import Path
from urllib.parse import quote, quote_plus, unquote_plus


def encodings(secret: str) -> dict[str, str]:
    """How a secret can appear: as is, URL-, JSON-, HTML-encoded, hex, base64 (whole and
    inside a longer base64 text, at each of the three byte alignments)."""
    raw = secret.encode()
    out = {
        "plain": secret,
        "quote": quote(secret, safe=""),
        "quote_plus": quote_plus(secret),
        "form-decoded": unquote_plus(secret),  # typed into a query, read back as a form value
        "json": json.dumps(secret)[1:-1],
        "html": html.escape(secret),
        "hex": raw.hex(),
        "base64": base64.b64encode(raw).decode(),
        "base64url": base64.urlsafe_b64encode(raw).decode().rstrip("="),
    }
    for pad in range(3):
        # The middle of the encoding: without the first and last groups of four, which
        # hold the bits of whatever comes before and after it.
        core = base64.b64encode(b"\0" * pad + raw).decode()[4:-4]
        out[f"base64 in a longer text, alignment {pad}"] = core
    return out


def found(blob: bytes | str, secret: str) -> list[str]:
    """The encodings of `secret` that `blob` holds."""
    data = blob.encode() if isinstance(blob, str) else blob
    return [name for name, enc in encodings(secret).items() if enc.encode() in data]


def file_blobs(path: Path) -> dict[str, bytes]:
    """A file's bytes, and a zip's members each on their own (`trace.zip!trace.network`)."""
    data = path.read_bytes()
    blobs = {path.name: data}
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            blobs |= {f"{path.name}!{n}": z.read(n) for n in z.namelist()}
    return blobs


def leaks_in_tree(root: Path, secret: str) -> dict[str, list[str]]:
    """Every file (and zip member) under `root` holding `secret` in any encoding."""
    out = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        for name, blob in file_blobs(path).items():
            if hits := found(blob, secret):
                out[f"{path.relative_to(root).parent}/{name}"] = hits
    return out
