"""Hostile inputs, shared by the tests and `benchmarks/hostile.py`: gzip bombs (built in about
a second however large they inflate), an XML entity bomb, a YAML alias bomb, and a loopback
server that sends gzip bombs as `Content-Encoding: gzip` responses."""

from __future__ import annotations

import contextlib
import struct
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_MB = 1 << 20


def gzip_bomb(megabytes: int, head: bytes = b"", tail: bytes = b"") -> bytes:
    """One gzip member of `head`, `megabytes` MB of zeros, then `tail`, built without
    compressing the zeros: each MB is deflated after a full flush, so every block but the first
    compresses to the same bytes (1.2 GB inflated is about 1.2 MB of gzip, made in a second)."""
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


def entity_bomb(uses: int = 10_000) -> bytes:
    """An RSS feed of ~150 KB whose one title is a 100 KB entity used `uses` times: 1 GB
    expanded at the default (feedparser's fallback parser expanded it whole: 2.9 GB peak)."""
    return (
        b'<?xml version="1.0"?>\n<!DOCTYPE rss [\n<!ENTITY big "' + b"a" * 100_000 + b'">\n]>\n'
        b'<rss version="2.0"><channel><title>t</title><item><title>'
        + b"&big;" * uses
        + b"</title><link>http://x.test/a</link></item></channel></rss>"
    )


def alias_bomb(levels: int = 10) -> bytes:
    """YAML's "billion laughs": each level names the one below nine times (~520 bytes,
    9**levels strings once expanded)."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return ("\n".join(lines) + "\n").encode()


class _GzippedBodies(BaseHTTPRequestHandler):
    bodies: dict[str, tuple[str, bytes]] = {}

    def do_GET(self):
        ctype, body = self.bodies[self.path]
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        # The client may stop reading at its limit: what it should do.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serving_gzipped(bodies: dict[str, tuple[str, bytes]]) -> Iterator[str]:
    """A loopback server answering each path of `bodies` with (content type, gzip bytes) as
    `Content-Encoding: gzip`; yields its base URL."""
    handler = type("Handler", (_GzippedBodies,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
