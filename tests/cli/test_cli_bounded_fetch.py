"""`newsbench feeds inspect URL` and `newsbench inspect URL` read a response as the poller
does: decoded as it arrives and refused once past the size limit, so a gzip bomb (a small
`Content-Encoding: gzip` body that inflates to hundreds of MB) is never inflated whole.
Each command runs in a child capped at 2 GB of address space, its own peak RSS measured."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from newsbench_dagster.core.web.network import MAX_RESPONSE_BYTES
from tests.support.bombs import gzip_bomb, serving_gzipped
from tests.support.bounded import GB, run_capped

BOMB_MB = 400  # inflated size; the limit is 50 MB


@pytest.fixture(scope="module")
def bomb_server() -> Iterator[str]:
    bodies = {
        "/feed.xml": ("application/rss+xml", gzip_bomb(BOMB_MB, b"<rss><channel><title>")),
        "/page.html": ("text/html", gzip_bomb(BOMB_MB, b"<!doctype html><html><body><p>")),
    }
    with serving_gzipped(bodies) as url:
        yield url


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
