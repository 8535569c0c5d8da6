"""Auditing a recording before it is used: every secret left in it and every page that is a
bot wall / CAPTCHA (a recording of the wall, not of the site) fails it; and an index of its
records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from newsbench_dagster.core.replay.bot_check import bot_check
from newsbench_dagster.core.replay.redact import SECRET_HEADERS, clean_body, clean_url
from newsbench_dagster.core.replay.warc import (
    PayloadTooLarge,
    exchanges_from_warc,
    read_payload,
    warc_records,
)

# How much of a page the bot-check reads (a challenge page is a few KB).
_PAGE_HEAD = 1_000_000


@dataclass(frozen=True)
class Finding:
    offset: int
    url: str
    # cookie | authorization | credential_param | personal_data | bot_check | too_large |
    # unresolved_revisit
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} at offset {self.offset} ({self.url}): {self.detail}"


def index(path: str | Path, *, allow_truncated: bool = False) -> list[dict]:
    """One entry per record: type, target URI, date, offset and length in the file. A file
    that is empty, truncated or not WARC is refused (`WarcError`), unless `allow_truncated`:
    then the whole records only. No payload is decoded."""
    out = []
    with open(path, "rb") as f:
        for it, rec in warc_records(f, path, allow_truncated=allow_truncated):
            entry = {
                "type": rec.rec_type,
                "url": rec.rec_headers.get_header("WARC-Target-URI"),
                "date": rec.rec_headers.get_header("WARC-Date"),
                "offset": it.get_record_offset(),
            }
            if rec.http_headers is not None and rec.rec_type in ("response", "revisit"):
                entry["status"] = rec.http_headers.get_statuscode()
            entry["length"] = it.get_record_length()
            out.append(entry)
    return out


def audit(path: str | Path, *, allow_truncated: bool = False) -> list[Finding]:
    """Every secret left in a recording, every page that is a bot wall, every record whose
    payload decodes beyond the limit (`MAX_PAYLOAD_BYTES`) and every revisit whose original
    is absent; empty = clean. A file that is empty, truncated or not WARC is refused (`WarcError`),
    unless `allow_truncated`: then its whole records are audited."""
    found: list[Finding] = []
    with open(path, "rb") as f:
        for it, rec in warc_records(f, path, allow_truncated=allow_truncated):
            url = rec.rec_headers.get_header("WARC-Target-URI")
            # The body first: asking the iterator for the offset ends the record's stream.
            try:
                body, too_large = read_payload(rec, path), None
            except PayloadTooLarge as e:
                body, too_large = b"", e
            offset = it.get_record_offset()
            if too_large is not None:
                found.append(Finding(offset, url, "too_large", str(too_large)))
            if rec.http_headers is not None and rec.rec_type in ("request", "response", "revisit"):
                for name, _ in rec.http_headers.headers:
                    low = name.lower()
                    if low in ("cookie", "set-cookie", "set-cookie2"):
                        found.append(Finding(offset, url, "cookie", f"{name} header"))
                    elif low in SECRET_HEADERS:
                        found.append(Finding(offset, url, "authorization", f"{name} header"))
            if url and clean_url(url)[1]:
                found.append(Finding(offset, url, "credential_param", "credential in the URL"))
            if rec.rec_type == "request" and clean_body(body)[1]:
                found.append(
                    Finding(offset, url, "personal_data", "e-mail or credential in the body")
                )
            if rec.rec_type == "response" and body:
                ctype = (
                    rec.http_headers.get_header("Content-Type") or "" if rec.http_headers else ""
                )
                if "html" in ctype.lower():
                    text = body[:_PAGE_HEAD].decode("utf-8", "replace")
                    if why := bot_check(text):
                        found.append(Finding(offset, url, "bot_check", why))
    for ex in exchanges_from_warc(path, allow_truncated=allow_truncated):
        if ex.refused_kind == "unresolved_revisit":
            found.append(Finding(int(ex.response), ex.url, "unresolved_revisit", ex.refused))
    return found
