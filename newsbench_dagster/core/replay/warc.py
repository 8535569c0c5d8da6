"""WARC files, read and written (warcio): the records of a file, a response record at its
offset, a recording's exchanges (each request with where its response is, revisits resolved
to their originals), the recording clock of our warcinfo record, and a writer that starts a
file with that record.

Recordings are untrusted input: a file is scanned whole before it is used (`check_warc`:
empty, truncated and non-WARC files are refused naming the record and offset where they
break), no header line is read past `MAX_LINE_BYTES` and no payload is decoded past
`MAX_PAYLOAD_BYTES` (chunked transfer and gzip/deflate are undone here, a MB at a time).
"""

from __future__ import annotations

import contextlib
import io
import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import DecompressingBufferedReader
from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParserException
from warcio.warcwriter import WARCWriter

from newsbench_dagster.core.web.network import MAX_RESPONSE_BYTES

WARC_VERSION = "WARC/1.1"
# No record's payload is decoded beyond this (the fetcher's own cap on a response): a
# few KB of WARC can hold a gzip-encoded body of gigabytes.
MAX_PAYLOAD_BYTES = MAX_RESPONSE_BYTES
_STEP = 1 << 20  # payloads are decoded a MB at a time


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
    # A revisit answered with its own headers: where the original's payload is.
    body_at: int | None = None
    # Why this recorded response cannot be served (payload over the limit, a revisit whose
    # original is absent): replay answers it as a miss, naming this.
    refused: str | None = None
    refused_kind: str | None = None  # too_large | unresolved_revisit


class WarcError(ValueError):
    """A file that is not a whole, readable WARC (empty, cut short, not WARC at all), or a
    record in it that cannot be read within the limits; the message names the file and
    where it broke."""


class PayloadTooLarge(WarcError):
    """A record whose payload decodes to more than the limit: refused, never inflated."""


@dataclass(frozen=True)
class Integrity:
    """What a scan of a WARC found: how many records are whole, and the first broken one
    (None: the file is whole)."""

    path: str
    records: int
    broken_offset: int | None = None
    problem: str | None = None  # names the file, the record number and its offset

    @property
    def whole(self) -> bool:
        return self.problem is None


# No header line is read beyond this: warcio reads a line until its newline, and a few KB
# of gzip can hold a "line" of gigabytes.
MAX_LINE_BYTES = 1 << 20


class LineTooLong(ValueError):
    """A WARC or HTTP header line longer than `MAX_LINE_BYTES`."""


class _BoundedLines(DecompressingBufferedReader):
    """warcio's file reader, its lines bounded."""

    def readline(self, length=None):
        cap = MAX_LINE_BYTES + 1 if length is None else min(length, MAX_LINE_BYTES + 1)
        line = super().readline(cap)
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            raise LineTooLong(f"a header line longer than {_size(MAX_LINE_BYTES)}")
        return line


class _Iterator(ArchiveIterator):
    """warcio's record iterator on `_BoundedLines`."""

    def __init__(self, fileobj, **kwargs) -> None:
        super().__init__(fileobj, **kwargs)
        self.reader = _BoundedLines(self.fh, block_size=self.reader.block_size)


# What warcio raises on a record cut or garbled inside its headers (a cut WARC-Target-URI
# line is an AttributeError deep in its loader).
_BROKEN = (
    ArchiveLoadFailed,
    StatusAndHeadersParserException,
    EOFError,
    zlib.error,
    AttributeError,
    TypeError,
    ValueError,
    IndexError,
    KeyError,
)


def check_warc(path: str | Path) -> Integrity:
    """Scan a WARC once, record by record, without decoding any payload (memory stays
    bounded whatever the records hold): refuse (`WarcError`) an empty file, one with no
    records and one that is not WARC; report where a truncated or corrupt one breaks (a
    record whose content is shorter than its Content-Length, a gzip member cut short, a
    header without Content-Length, bytes after the last whole record). One scan per file
    version: reading it again (audit, then its exchanges) does not rescan it."""
    path = Path(path)
    stat = path.stat()
    return _check(str(path), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=32)
def _check(name: str, size: int, _mtime: int) -> Integrity:
    path = Path(name)
    if size == 0:
        raise WarcError(f"{path}: empty file (0 bytes), not a WARC")
    n, offset, url = 0, 0, None
    with open(path, "rb") as f, contextlib.redirect_stderr(io.StringIO()):
        it = _Iterator(f)
        try:
            for rec in it:
                offset, url = it.offset, rec.rec_headers.get_header("WARC-Target-URI")
                if rec.format != "warc":
                    raise WarcError(
                        f"{path}: not a WARC file (record {n + 1} at offset {offset} "
                        f"read as {rec.format!r})"
                    )
                errors = it.err_count
                it.read_to_end()
                problem = None
                short = getattr(rec.raw_stream, "limit", 0)
                if rec.rec_headers.get_header("Content-Length") is None:
                    problem = "its WARC header has no Content-Length (cut short or garbled)"
                elif short:
                    problem = f"its content ends {short} bytes short of its Content-Length"
                elif it.reader.decompressor is not None and not it.reader.decompressor.eof:
                    problem = "its gzip member is cut short"
                elif it.err_count > errors:
                    problem = "its Content-Length does not end where the next record starts"
                if problem:
                    where = f" ({url})" if url else ""
                    return Integrity(
                        str(path),
                        n,
                        offset,
                        f"{path}: truncated or corrupt at record {n + 1}, offset {offset}"
                        f"{where}: {problem}; {n} whole record(s) before it",
                    )
                n += 1
            # What warcio stops at silently: a last gzip member too short to yield a byte.
            end = it.offset
            f.seek(end)
            if n and f.read(4096).strip():
                return Integrity(
                    str(path),
                    n,
                    end,
                    f"{path}: truncated or corrupt at record {n + 1}, offset {end}: "
                    f"{size - end} bytes that are not a whole record; "
                    f"{n} whole record(s) before it",
                )
        except WarcError:
            raise
        except _BROKEN as e:
            if "non-chunked gzip" in str(e):
                raise WarcError(
                    f"{path}: gzipped as one stream, not one gzip member per record: records "
                    f"cannot be read at their offsets (`warcio recompress {path} OUT` fixes it)"
                ) from e
            at = it.offset
            if n == 0:
                detail = " ".join(str(e).split())[:200]
                raise WarcError(f"{path}: not a readable WARC file: {detail}") from e
            return Integrity(
                str(path),
                n,
                at,
                f"{path}: truncated or corrupt at record {n + 1}, offset {at}: "
                f"{type(e).__name__}: {' '.join(str(e).split())[:200]}; "
                f"{n} whole record(s) before it",
            )
    if n == 0:
        raise WarcError(f"{path}: holds no WARC records")
    return Integrity(str(path), n)


def warc_records(f: BinaryIO, path: str | Path, *, allow_truncated: bool = False):
    """warcio's iterator over `f` (the file at `path`), as (iterator, record) pairs, after
    `check_warc`: a file that is not WARC, empty or truncated is refused (`WarcError`); with
    `allow_truncated`, the whole records before the break are read and the broken rest is
    not."""
    integrity = check_warc(path)
    if not integrity.whole and not allow_truncated:
        raise WarcError(integrity.problem)
    it = _Iterator(f)
    try:
        for rec in it:
            if integrity.broken_offset is not None and it.offset >= integrity.broken_offset:
                break
            yield it, rec
    except ArchiveLoadFailed as e:
        raise WarcError(f"{path}: not a readable WARC file: {e}") from e


def _steps(stream):
    """A stream, a MB at a time."""
    while chunk := stream.read(_STEP):
        yield chunk


def _dechunked(raw):
    """Transfer-Encoding: chunked, undone in bounded steps (warcio reads a whole chunk, up
    to 2 GB, at once). A body that turns out not to be chunked is passed as it is, and one
    whose framing breaks later ends there, as warcio does."""
    first = True
    while line := raw.readline(64):
        try:
            size = int(line.strip().split(b";")[0], 16)
        except ValueError:
            if first:
                yield line
                yield from _steps(raw)
            return
        first = False
        if size == 0:
            return
        while size > 0 and (data := raw.read(min(size, _STEP))):
            size -= len(data)
            yield data
        if size:
            return
        raw.read(2)  # the chunk's CRLF


def _inflated(parts, encoding: str):
    """Content-Encoding gzip / deflate undone with a bound on every step's output (warcio
    inflates a whole chunk in one call: a 1 MB chunk can be a GB). Another encoding, or a
    body that is not compressed after all, is passed as it is, as warcio does."""
    modes = {"gzip": [31], "x-gzip": [31], "deflate": [15, -15]}.get(encoding)
    if not modes:
        yield from parts
        return
    inflater = None
    for data in parts:
        if inflater is None:
            for wbits in modes:
                try:
                    inflater = zlib.decompressobj(wbits)
                    out = inflater.decompress(data, _STEP)
                    break
                except zlib.error:
                    inflater = None
            if inflater is None:  # not compressed after all
                yield data
                yield from parts
                return
        else:
            try:
                out = inflater.decompress(data, _STEP)
            except zlib.error:
                return  # corrupt from here on: what was inflated is the body
        while True:
            if out:
                yield out
            if not inflater.unconsumed_tail or inflater.eof:
                break
            out = inflater.decompress(inflater.unconsumed_tail, _STEP)
        if inflater.eof:
            return


def _decoded(rec):
    """A record's payload, decoded as warcio's `content_stream` decodes it (chunked
    transfer, gzip/deflate content encoding), in steps of at most a MB."""
    http = rec.http_headers
    if http is None:
        return _steps(rec.raw_stream)
    chunked = "chunked" in (http.get_header("Transfer-Encoding") or "").lower()
    parts = _dechunked(rec.raw_stream) if chunked else _steps(rec.raw_stream)
    return _inflated(parts, (http.get_header("Content-Encoding") or "").strip().lower())


def _size(n: int) -> str:
    return f"{n // _STEP} MB" if n % _STEP == 0 else f"{n} bytes"


def read_payload(rec, path: str | Path, limit: int | None = None) -> bytes:
    """A record's payload, decoded (chunked transfer, gzip/deflate content encoding), in
    bounded steps: over `limit` decoded bytes (default `MAX_PAYLOAD_BYTES`) the record is
    refused (`PayloadTooLarge`, naming the file, the record's URL and the limit) and never
    inflated further."""
    limit = MAX_PAYLOAD_BYTES if limit is None else limit
    parts, size = [], 0
    for chunk in _decoded(rec):
        size += len(chunk)
        if size > limit:
            url = rec.rec_headers.get_header("WARC-Target-URI")
            raise PayloadTooLarge(
                f"{path}: the {rec.rec_type} record of {url} decodes to more than "
                f"{_size(limit)} (the payload limit): refused, not inflated further"
            )
        parts.append(chunk)
    return b"".join(parts)


def read_head(rec, size: int) -> bytes:
    """The first `size` decoded bytes of a record's payload (the rest is not decoded)."""
    parts, got = [], 0
    for chunk in _decoded(rec):
        parts.append(chunk[: size - got])
        got += len(parts[-1])
        if got >= size:
            break
    return b"".join(parts)


def record_at(
    path: str | Path, offset: int, limit: int | None = None
) -> tuple[StatusAndHeaders | None, bytes]:
    """The HTTP headers (None for a record without) and the body of the record at `offset`,
    the body bounded by `limit` (`PayloadTooLarge` beyond)."""
    with open(path, "rb") as f:
        f.seek(offset)
        rec = next(iter(_Iterator(f)))
        return rec.http_headers, read_payload(rec, path, limit)


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


def recording_clock(path: str | Path, *, allow_truncated: bool = False) -> str | None:
    """The `recording-clock` of a recording's warcinfo record (None: another tool's WARC)."""
    with open(path, "rb") as f:
        for _, rec in warc_records(f, path, allow_truncated=allow_truncated):
            if rec.rec_type != "warcinfo":
                return None
            for line in read_head(rec, 64_000).decode("utf-8", "replace").splitlines():
                key, _, value = line.partition(":")
                if key == "recording-clock":
                    return value.strip()
    return None


def _response(rec, offset: int, body: bytes, refused: str | None) -> dict:
    h, http = rec.rec_headers, rec.http_headers
    try:
        status = int(http.get_statuscode()) if http else None
    except (TypeError, ValueError):
        status = None
    return {
        "type": rec.rec_type,
        "id": h.get_header("WARC-Record-ID"),
        "url": h.get_header("WARC-Target-URI"),
        "offset": offset,
        "digest": h.get_header("WARC-Payload-Digest"),
        "status": status,
        "content_type": (http.get_header("Content-Type") or "") if http else "",
        "length": len(body),
        "date": h.get_header("WARC-Date"),
        "refers_to": h.get_header("WARC-Refers-To"),
        "refers_uri": h.get_header("WARC-Refers-To-Target-URI"),
        "http": http is not None,
        "refused": refused,
    }


def _original(r: dict, by_id: dict, by_url_digest: dict, by_digest: dict, by_url: dict):
    """The response record a revisit stands for: the record it names (WARC-Refers-To),
    else the same payload at the URL it names (WARC-Refers-To-Target-URI, its own URL when
    absent), else the same payload at any URL (a URL-agnostic revisit), else, for a revisit
    without a digest (server-not-modified), the URL's recorded response."""
    uri = r["refers_uri"] or r["url"]
    digest = (r["digest"] or "").lower() or None
    for found in (
        by_id.get(r["refers_to"]),
        by_url_digest.get((uri, digest)) if digest else None,
        by_digest.get(digest) if digest else None,
        None if digest else by_url.get(uri),
    ):
        if found is not None:
            return found
    return None


def exchanges_from_warc(path: str | Path, *, allow_truncated: bool = False) -> list[Exchange]:
    """The recorded requests of a WARC (ours or another tool's), each with its response
    record's offset and payload digest, in recorded order. A revisit record (a
    deduplicating crawler's "same as before") is resolved to its original, same-URL or
    URL-agnostic; a revisit whose original is not in the file, and a record whose payload
    decodes beyond `MAX_PAYLOAD_BYTES`, are kept as refused (`Exchange.refused` says why):
    replay answers them as misses, the audit reports them."""
    requests: dict[str, tuple[str, str, bytes | None]] = {}
    responses: list[dict] = []
    with open(path, "rb") as f:
        for it, rec in warc_records(f, path, allow_truncated=allow_truncated):
            refused = None
            try:
                body = read_payload(rec, path)
            except PayloadTooLarge as e:
                body, refused = b"", str(e)
            offset = it.get_record_offset()
            url = rec.rec_headers.get_header("WARC-Target-URI")
            if rec.rec_type == "request" and rec.http_headers is not None:
                method = rec.http_headers.protocol  # warcio keeps a request's method here
                to = rec.rec_headers.get_header("WARC-Concurrent-To")
                requests[to or url] = (method.split(" ")[0], url, None if refused else body)
            elif rec.rec_type in ("response", "revisit"):
                responses.append(_response(rec, offset, body, refused))
    by_id: dict = {}
    by_url_digest: dict = {}
    by_digest: dict = {}
    by_url: dict = {}
    for r in responses:
        if r["type"] == "response" and not r["refused"]:
            digest = (r["digest"] or "").lower() or None
            by_id.setdefault(r["id"], r)
            by_url.setdefault(r["url"], r)
            if digest:
                by_url_digest.setdefault((r["url"], digest), r)
                by_digest.setdefault(digest, r)
    out = []
    for order, r in enumerate(responses):
        method, _, body = requests.get(r["id"]) or requests.get(r["url"]) or ("GET", r["url"], b"")
        refused, body_at, headers_at = r["refused"], None, r["offset"]
        kind = "too_large" if refused else None
        status, ctype, length, digest = r["status"], r["content_type"], r["length"], r["digest"]
        if body is None:
            body = b""
            refused = refused or f"{path}: the request record of {r['url']} is over the limit"
            kind = "too_large"
        if r["type"] == "revisit" and not refused:
            original = _original(r, by_id, by_url_digest, by_digest, by_url)
            if original is None:
                named = r["refers_uri"] or r["refers_to"] or r["digest"] or "nothing"
                refused = (
                    f"{path}: revisit of {r['url']} (refers to {named}) whose original is not "
                    "in the recording"
                )
                kind = "unresolved_revisit"
            elif r["http"] and status not in (None, 304):
                # The revisit's own response headers, the original's payload.
                body_at = original["offset"]
                length, digest = original["length"], digest or original["digest"]
            else:
                # No headers of its own, or a 304 (server-not-modified): the original, whole.
                headers_at, status = original["offset"], original["status"]
                ctype, length = original["content_type"], original["length"]
                digest = digest or original["digest"]
        out.append(
            Exchange(
                method,
                r["url"],
                body,
                order,
                headers_at,
                digest,
                status,
                ctype,
                length,
                r["date"],
                r["id"],
                body_at=body_at,
                refused=refused,
                refused_kind=kind,
            )
        )
    return out
