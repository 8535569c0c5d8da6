"""`newsbench feeds inspect URL` and `newsbench inspect URL` read a response as the poller
does: decoded as it arrives and refused once past the size limit, so a gzip bomb (a small
`Content-Encoding: gzip` body that inflates to hundreds of MB) is never inflated whole.
Each command runs in a child capped at 2 GB of address space, its own peak RSS measured."""

from __future__ import annotations

import contextlib
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from newsbench_dagster.core.web.network import MAX_RESPONSE_BYTES
from tests.support.bounded import GB, run_capped

BOMB_MB = 400  # inflated size; the limit is 50 MB


def gzip_bomb(megabytes: int, head: bytes) -> bytes:
    """`head` then zeros, `megabytes` in all once inflated; about 1 KB per MB on the wire."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    parts = [packer.compress(head)] + [packer.compress(zeros) for _ in range(megabytes)]
    return b"".join([*parts, packer.flush()])


class _Bombs(BaseHTTPRequestHandler):
    bodies: dict[str, tuple[str, bytes]] = {}

    def do_GET(self):
        ctype, body = self.bodies[self.path]
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        # The client may stop reading at the limit: what it should do.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def bomb_server() -> Iterator[str]:
    _Bombs.bodies = {
        "/feed.xml": ("application/rss+xml", gzip_bomb(BOMB_MB, b"<rss><channel><title>")),
        "/page.html": ("text/html", gzip_bomb(BOMB_MB, b"<!doctype html><html><body><p>")),
    }
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Bombs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.parametrize(
    ("command", "path"), [(["feeds", "inspect"], "/feed.xml"), (["inspect"], "/page.html")]
)
def test_a_gzip_bomb_url_is_refused_at_the_limit_without_inflating_it(bomb_server, command, path):
    url = bomb_server + path
    done = run_capped([*command, url], cap_bytes=2 * GB, timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.message == (
        f"error: {url}: response larger than {MAX_RESPONSE_BYTES} bytes (50 MB) once decoded: "
        "not read"
    ), done.stderr
    assert "Traceback" not in done.stderr
    # Inflating the whole body took its 400 MB and more; the refusal stops near the limit.
    assert done.peak_mb < 300, done.peak_mb


def test_a_saved_file_over_the_limit_is_refused_unread(tmp_path):
    big = tmp_path / "huge.xml"
    with big.open("wb") as f:
        f.truncate(MAX_RESPONSE_BYTES + 1)  # sparse: costs no disk
    done = run_capped(["feeds", "inspect", str(big)], timeout=60)
    assert done.returncode == 1
    assert done.message == (
        f"error: {big}: {MAX_RESPONSE_BYTES + 1} bytes, over the {MAX_RESPONSE_BYTES} byte "
        "limit: not read"
    )
