"""WARCs written with warcio for tests of hostile and foreign recordings: a page whose
gzip-encoded body inflates to gigabytes from a few KB, revisit records, plain pages."""

from __future__ import annotations

import struct
import zlib
from io import BytesIO
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

_MB = 1 << 20


def gzip_of_zeros(megabytes: int) -> bytes:
    """A gzip stream of `megabytes` MB of zeros, built without compressing them all: each MB
    is deflated after a full flush, so every block but the first compresses to the same
    bytes (a 1.2 GB body is about 1.2 MB of gzip, made in a second)."""
    block = bytes(_MB)
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = co.compress(block) + co.flush(zlib.Z_FULL_FLUSH)
    again = co.compress(block) + co.flush(zlib.Z_FULL_FLUSH)
    end = co.flush(zlib.Z_FINISH)
    crc = 0
    for _ in range(megabytes):
        crc = zlib.crc32(block, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = struct.pack("<II", crc & 0xFFFFFFFF, (megabytes * _MB) & 0xFFFFFFFF)
    return header + first + again * (megabytes - 1) + end + trailer


def _deflated(head: bytes, megabytes: int, tail: bytes) -> bytes:
    """One gzip member: `head`, `megabytes` MB of zeros, `tail` (as `gzip_of_zeros`)."""
    block = bytes(_MB)
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    parts = [co.compress(head) + co.flush(zlib.Z_FULL_FLUSH)]
    first = co.compress(block) + co.flush(zlib.Z_FULL_FLUSH)
    again = co.compress(block) + co.flush(zlib.Z_FULL_FLUSH)
    parts += [first, again * (megabytes - 1), co.compress(tail) + co.flush(zlib.Z_FINISH)]
    crc = zlib.crc32(head)
    for _ in range(megabytes):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(tail, crc)
    size = len(head) + megabytes * _MB + len(tail)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return header + b"".join(parts) + struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF)


def raw_bomb(path: Path, url: str, megabytes: int) -> Path:
    """A gzipped WARC whose one response record is itself `megabytes` MB (no content
    encoding: the WARC's own gzip member inflates)."""
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
    head = (
        b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:0>\r\n"
        b"WARC-Date: 2026-12-01T00:00:00Z\r\nWARC-Target-URI: %s\r\n"
        b"Content-Type: application/http; msgtype=response\r\nContent-Length: %d\r\n\r\n"
    ) % (url.encode(), len(http) + megabytes * _MB)
    path.write_bytes(_deflated(head + http, megabytes, b"\r\n\r\n"))
    return path


def header_line_bomb(path: Path, megabytes: int) -> Path:
    """A gzipped WARC whose first header line is `megabytes` MB long, without a newline."""
    path.write_bytes(_deflated(b"WARC/1.1\r\nWARC-Type: response\r\nX-Long: ", megabytes, b""))
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
