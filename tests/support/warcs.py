"""WARCs written with warcio for tests of hostile and foreign recordings: a page whose
gzip-encoded body inflates to gigabytes from a few KB, revisit records, plain pages."""

from __future__ import annotations

from io import BytesIO
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.support.bombs import gzip_bomb

_MB = 1 << 20


def raw_bomb(path: Path, url: str, megabytes: int) -> Path:
    """A gzipped WARC whose one response record is itself `megabytes` MB (no content
    encoding: the WARC's own gzip member inflates)."""
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
    head = (
        b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:0>\r\n"
        b"WARC-Date: 2026-12-01T00:00:00Z\r\nWARC-Target-URI: %s\r\n"
        b"Content-Type: application/http; msgtype=response\r\nContent-Length: %d\r\n\r\n"
    ) % (url.encode(), len(http) + megabytes * _MB)
    path.write_bytes(gzip_bomb(megabytes, head + http, b"\r\n\r\n"))
    return path


def header_line_bomb(path: Path, megabytes: int) -> Path:
    """A gzipped WARC whose first header line is `megabytes` MB long, without a newline."""
    path.write_bytes(gzip_bomb(megabytes, b"WARC/1.1\r\nWARC-Type: response\r\nX-Long: "))
    return path


def page(url: str, body: bytes, ctype: str = "text/html", headers=(), status="200 OK"):
    """A response record's parts: (url, status, headers, payload)."""
    return (url, status, [("Content-Type", ctype), *headers], body)


def write_warc(path: Path, records, *, gzip: bool = True) -> Path:
    """`records`: (url, status, headers, payload) responses, or dicts
    {"revisit": url, "refers_to_uri", "refers_to" (a record id, or "@URL"), "digest",
    "headers"} for revisits.
    Returns the path; each response record's id and digest are in `write_warc.ids`."""
    ids: dict[str, tuple[str, str]] = {}
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=gzip, warc_version="WARC/1.1")
        for r in records:
            if isinstance(r, dict):
                http = None
                if r.get("headers") is not None:
                    http = StatusAndHeaders(
                        r.get("status", "200 OK"), r["headers"], protocol="HTTP/1.1"
                    )
                rec = w.create_revisit_record(
                    r["revisit"],
                    digest=r["digest"],
                    refers_to_uri=r.get("refers_to_uri"),
                    refers_to_date=r.get("refers_to_date"),
                    http_headers=http,
                )
                for name in ("WARC-Refers-To-Target-URI", "WARC-Refers-To-Date"):
                    if rec.rec_headers.get_header(name) in (None, "None"):
                        rec.rec_headers.remove_header(name)  # absent, as some tools write
                if refers_to := r.get("refers_to"):
                    # "@URL": the record written for URL earlier in this file.
                    if refers_to.startswith("@"):
                        refers_to = ids[refers_to[1:]][0]
                    rec.rec_headers.add_header("WARC-Refers-To", refers_to)
                w.write_record(rec)
                continue
            url, status, headers, body = r
            http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
            rec = w.create_warc_record(
                url, "response", payload=BytesIO(body), length=len(body), http_headers=http
            )
            w.write_record(rec)
            ids[url] = (
                rec.rec_headers.get_header("WARC-Record-ID"),
                rec.rec_headers.get_header("WARC-Payload-Digest"),
            )
    write_warc.ids = ids
    return path
