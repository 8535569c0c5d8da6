"""WARC files, read and written (warcio): the records of a file, a response record at its
offset, a recording's exchanges (each request with where its response is), the recording
clock of our warcinfo record, and a writer that starts a file with that record.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

WARC_VERSION = "WARC/1.1"


@dataclass(frozen=True)
class Exchange:
    """A recorded request (and where its response is)."""

    method: str
    url: str
    body: bytes = b""
    order: int = 0  # position in the recording
    response: Any = None  # the response record's offset, or the response itself
    digest: str | None = None  # the response payload's digest (WARC-Payload-Digest)
    status: int | None = None
    content_type: str = ""
    length: int = 0
    date: str | None = None  # when it was recorded (the response's WARC-Date)
    record_id: str | None = None  # the response record's WARC-Record-ID


def warc_records(f: BinaryIO, path: str | Path):
    """warcio's iterator over `f` (the file at `path`), as (iterator, record) pairs, refusing
    what is not WARC (it reads junk as an ARC record)."""
    from warcio.exceptions import ArchiveLoadFailed

    it = ArchiveIterator(f)
    try:
        for rec in it:
            if rec.format != "warc":
                raise ValueError(f"{path}: not a WARC file (record read as {rec.format!r})")
            yield it, rec
    except ArchiveLoadFailed as e:
        raise ValueError(f"{path}: not a readable WARC file: {e}") from e


def record_at(path: str | Path, offset: int) -> tuple[StatusAndHeaders | None, bytes]:
    """The HTTP headers (None for a record without) and the body of the record at `offset`."""
    with open(path, "rb") as f:
        f.seek(offset)
        rec = next(iter(ArchiveIterator(f)))
        return rec.http_headers, rec.content_stream().read()


def warc_writer(f: BinaryIO, name: str, clock: str, info: dict | None = None) -> WARCWriter:
    """A gzipped WARC 1.1 writer on `f`, the file's warcinfo record (our software, the
    recording clock, then `info`) already written."""
    writer = WARCWriter(f, gzip=True, warc_version=WARC_VERSION)
    record = writer.create_warcinfo_record(
        name,
        {
            "software": "newsbench recorder (warcio)",
            "format": "WARC File Format 1.1",
            "recording-clock": clock,
            **(info or {}),
        },
    )
    writer.write_record(record)
    return writer


def recording_clock(path: str | Path) -> str | None:
    """The `recording-clock` of a recording's warcinfo record (None: another tool's WARC)."""
    with open(path, "rb") as f:
        for _, rec in warc_records(f, path):
            if rec.rec_type != "warcinfo":
                return None
            for line in rec.content_stream().read().decode("utf-8", "replace").splitlines():
                key, _, value = line.partition(":")
                if key == "recording-clock":
                    return value.strip()
    return None


def exchanges_from_warc(path: str | Path) -> list[Exchange]:
    """The recorded requests of a WARC (ours or another tool's), each with its response
    record's offset and payload digest, in recorded order."""
    requests: dict[str, tuple[str, str, bytes]] = {}
    responses: list[dict] = []
    with open(path, "rb") as f:
        for it, rec in warc_records(f, path):
            body = rec.content_stream().read()
            offset = it.get_record_offset()
            url = rec.rec_headers.get_header("WARC-Target-URI")
            if rec.rec_type == "request" and rec.http_headers is not None:
                method = rec.http_headers.protocol  # warcio keeps a request's method here
                to = rec.rec_headers.get_header("WARC-Concurrent-To")
                requests[to or url] = (method.split(" ")[0], url, body)
            elif rec.rec_type == "response":
                http = rec.http_headers
                responses.append(
                    {
                        "id": rec.rec_headers.get_header("WARC-Record-ID"),
                        "url": url,
                        "offset": offset,
                        "digest": rec.rec_headers.get_header("WARC-Payload-Digest"),
                        "status": int(http.get_statuscode()) if http else None,
                        "content_type": (http.get_header("Content-Type") or "") if http else "",
                        "length": len(body),
                        "date": rec.rec_headers.get_header("WARC-Date"),
                    }
                )
    out = []
    for order, r in enumerate(responses):
        method, _, body = requests.get(r["id"]) or requests.get(r["url"]) or ("GET", r["url"], b"")
        out.append(
            Exchange(
                method,
                r["url"],
                body,
                order,
                r["offset"],
                r["digest"],
                r["status"],
                r["content_type"],
                r["length"],
                r["date"],
                r["id"],
            )
        )
    return out
