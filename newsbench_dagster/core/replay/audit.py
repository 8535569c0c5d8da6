"""Auditing a recording before it is used: every secret left in it and every page that is a
bot wall / CAPTCHA (a recording of the wall, not of the site) fails it; and an index of its
records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from newsbench_dagster.core.replay.redact import SECRET_HEADERS, clean_body, clean_url
from newsbench_dagster.core.replay.warc import warc_records

# A bot wall or CAPTCHA instead of the page: markers of the common challenge pages.
_BOT_CHECK = re.compile(
    r"(g-recaptcha|h-captcha|hcaptcha\.com|cf-challenge|challenge-platform|cf_chl_|"
    r"are you a robot|verify you are (a )?human|unusual traffic from your computer|"
    r"px-captcha|datadome)",
    re.I,
)


@dataclass(frozen=True)
class Finding:
    offset: int
    url: str
    kind: str  # cookie | authorization | credential_param | bot_check
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} at offset {self.offset} ({self.url}): {self.detail}"


def index(path: str | Path) -> list[dict]:
    """One entry per record: type, target URI, date, offset and length in the file."""
    out = []
    with open(path, "rb") as f:
        for it, rec in warc_records(f, path):
            entry = {
                "type": rec.rec_type,
                "url": rec.rec_headers.get_header("WARC-Target-URI"),
                "date": rec.rec_headers.get_header("WARC-Date"),
                "offset": it.get_record_offset(),
            }
            if rec.http_headers is not None and rec.rec_type == "response":
                entry["status"] = rec.http_headers.get_statuscode()
            rec.content_stream().read()
            entry["length"] = it.get_record_length()
            out.append(entry)
    return out


def audit(path: str | Path) -> list[Finding]:
    """Every secret left in a recording, and every page that is a bot wall; empty = clean."""
    found: list[Finding] = []
    with open(path, "rb") as f:
        for it, rec in warc_records(f, path):
            # The body first: asking the iterator for the offset ends the record's stream.
            body = rec.content_stream().read()
            offset, url = it.get_record_offset(), rec.rec_headers.get_header("WARC-Target-URI")
            if rec.http_headers is not None and rec.rec_type in ("request", "response"):
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
                text = body[:200_000].decode("utf-8", "replace")
                if "html" in ctype.lower() and (m := _BOT_CHECK.search(text)):
                    found.append(
                        Finding(offset, url, "bot_check", f"challenge page: {m.group(0)!r}")
                    )
    return found
