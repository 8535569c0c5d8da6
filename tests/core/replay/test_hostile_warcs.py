"""Hostile and broken recordings (issue 21, defects 1 and 8): a 3 KB WARC whose page is a
gzip-encoded 1.2 GB body is refused within bounded memory (audit, index, replay); empty,
truncated and non-WARC files fail audit, index and replay naming the file and where they
broke, and `--allow-truncated` keeps the whole records with a warning."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from newsbench_dagster.cli import app
from newsbench_dagster.core.replay import warc as warc_module
from newsbench_dagster.core.replay.audit import audit, index
from newsbench_dagster.core.replay.replayer import Recording, RecordingError
from newsbench_dagster.paths import PROJECT_ROOT, SUITES_DIR
from tests.core.replay.test_replay_runs import _in_replay
from tests.support.bombs import gzip_bomb
from tests.support.warcs import header_line_bomb, page, raw_bomb, write_warc

SUITE = SUITES_DIR / "regression" / "harbor-replayed.yaml"
H = "http://harbor-herald.test"
GZIP = [("Content-Encoding", "gzip")]
# The address space a child gets: inflating the 1.2 GB body once does not fit in it.
ADDRESS_SPACE = 1536 << 20

_BOMB_CHILD = textwrap.dedent(
    """
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    from typer.testing import CliRunner
    from newsbench_dagster.cli import app
    from newsbench_dagster.core.replay.audit import audit
    from newsbench_dagster.core.replay.replayer import Recording

    cli = CliRunner()
    bomb, mixed, suite, art, raw, line, chunked = sys.argv[1:8]
    out = {"findings": [(f.kind, f.url, f.detail) for f in audit(bomb)]}
    out["raw"] = [(f.kind, f.url) for f in audit(raw)]
    out["chunked"] = [(f.kind, f.url) for f in audit(chunked)]
    out["line"] = [cli.invoke(app, ["recording", c, line]).output for c in ("audit", "index")]
    for name, args in {
        "audit": ["recording", "audit", bomb],
        "index": ["recording", "index", bomb],
        "replay": ["replay", "run", suite, "--recording", bomb, "--artifacts", art],
    }.items():
        r = cli.invoke(app, args)
        out[name] = [r.exit_code, r.output, repr(r.exception)]
    rec = Recording(mixed)
    bomb_ex = next(e for e in rec.exchanges if e.url.endswith("/huge"))
    served = rec.payload(bomb_ex)
    out["mixed"] = [rec.refused, served.status, served.body.decode()[:300]]
    # VmHWM, not getrusage: the rusage peak carries the (large) test process's RSS over the
    # fork; this process's own peak starts at exec.
    hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    out["peak_mb"] = int(hwm.split()[1]) // 1024
    print(json.dumps(out))
    """
).replace("ADDRESS_SPACE", str(ADDRESS_SPACE))


@pytest.mark.heavy(10)  # about 10 s on two busy cores
def test_a_gzip_bomb_page_is_refused_in_bounded_memory_by_audit_index_and_replay(tmp_path):
    """3 KB of WARC, 1.2 GB once its page is decoded: replay reached 7.9 GB and the audit said
    "clean" at 2.5 GB. Checked in a child whose address space is capped at 1.5 GB, so a
    regression fails here (MemoryError) instead of eating the machine."""
    body = gzip_bomb(1200)
    bomb = write_warc(tmp_path / "bomb.warc.gz", [page(f"{H}/huge", body, headers=GZIP)])
    assert bomb.stat().st_size < 10_000
    mixed = write_warc(
        tmp_path / "mixed.warc.gz",
        [page(f"{H}/", b"<html><h1>Front</h1></html>"), page(f"{H}/huge", body, headers=GZIP)],
    )
    # The WARC's own gzip member inflating (a 120 MB record), and a 1.2 GB header line.
    raw = raw_bomb(tmp_path / "raw.warc.gz", f"{H}/raw", 120)
    line = header_line_bomb(tmp_path / "line.warc.gz", 1200)
    # The same body sent chunked: warcio reads a whole chunk and inflates it in one call.
    framed = b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
    chunked = write_warc(
        tmp_path / "chunked.warc.gz",
        [page(f"{H}/chunked", framed, headers=[*GZIP, ("Transfer-Encoding", "chunked")])],
    )
    args = [bomb, mixed, SUITE, tmp_path, raw, line, chunked]
    child = subprocess.run(
        [sys.executable, "-c", _BOMB_CHILD, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=PROJECT_ROOT,
    )
    assert child.returncode == 0, child.stderr[-3000:]
    out = json.loads(child.stdout.strip().splitlines()[-1])
    # The audit: a finding naming the WARC, the record's URL and the limit; not clean.
    [(kind, url, detail)] = out["findings"]
    assert (kind, url) == ("too_large", f"{H}/huge")
    assert str(bomb) in detail and "50 MB" in detail
    code, text, _ = out["audit"]
    assert code == 1 and "too_large" in text and "clean" not in text
    # The index decodes no payload at all.
    code, text, _ = out["index"]
    assert code == 0 and json.loads(text.splitlines()[0])["url"] == f"{H}/huge"
    # Replay of a recording whose only page is refused: said before any run, exit 2.
    code, text, exc = out["replay"]
    assert code == 2 and "SystemExit" in exc, text
    assert str(bomb) in text and f"{H}/huge" in text and "50 MB" in text
    # Beside servable pages: that page is refused (a 404 saying why), the rest is kept.
    refused, status, served = out["mixed"]
    assert status == 404 and f"{H}/huge" in served and "50 MB" in served
    assert len(refused) == 1 and str(mixed) in refused[0]
    assert out["raw"] == [["too_large", f"{H}/raw"]]
    assert out["chunked"] == [["too_large", f"{H}/chunked"]]
    for said in out["line"]:
        assert str(line) in said and "header line longer than 1 MB" in said
    assert out["peak_mb"] < 600


def test_a_refused_page_is_a_miss_naming_why_in_the_replay_log(tmp_path, monkeypatch):
    """In a replayed browser: the oversized page is answered as a miss whose rule names the
    WARC, the URL and the limit; its bytes are never served (a small limit here, so that
    the base, which served them, fails without inflating gigabytes)."""
    monkeypatch.setattr(warc_module, "MAX_PAYLOAD_BYTES", 1 << 20, raising=False)
    path = write_warc(
        tmp_path / "mixed.warc.gz",
        [
            page(f"{H}/", b"<html><h1>Front</h1></html>"),
            page(f"{H}/huge", gzip_bomb(8), headers=GZIP),
        ],
    )
    recording = Recording(path)

    async def steps(page_):
        front = await page_.goto(f"{H}/")
        huge = await page_.goto(f"{H}/huge")
        return front.status, huge.status, len(await huge.body())

    (front, huge, size), log = _in_replay(recording, steps)
    assert (front, huge) == (200, 404) and size < 1000
    [miss] = [e for e in log if e["url"] == f"{H}/huge"]
    assert miss["tag"] == "miss" and "1 MB" in miss["rule"] and str(path) in miss["rule"]
    assert len(recording.refused) == 1


def _six_pages(tmp_path, name="six.warc.gz", gz=True):
    return write_warc(
        tmp_path / name,
        [page(f"{H}/p{i}", b"<html>page %d %s</html>" % (i, b"x" * 900)) for i in range(6)],
        gzip=gz,
    )


@pytest.mark.parametrize("gz", [True, False], ids=["gzip", "plain"])
def test_every_cut_inside_a_record_is_found_and_every_record_boundary_is_whole(tmp_path, gz):
    """Cut the file at many points: a cut inside a record is reported at that record (its
    number and offset), a cut at a record boundary is a whole file of fewer records."""
    from newsbench_dagster.core.replay.warc import WarcError, check_warc

    whole = _six_pages(tmp_path, gz=gz)
    data = whole.read_bytes()
    starts = [e["offset"] for e in index(whole)]
    ends = [*starts[1:], len(data)]
    cut_file = tmp_path / "cut.warc"
    for cut in range(1, len(data), 23 if gz else 97):
        cut_file.write_bytes(data[:cut])
        if cut < starts[1] and not gz and cut < 40:
            continue  # a few bytes of a WARC header: not even a record (tested below)
        n = sum(end <= cut for end in ends)  # whole records before the cut
        try:
            integrity = check_warc(cut_file)
        except WarcError as e:
            assert n == 0 and str(cut_file) in str(e), (cut, e)
            continue
        # A plain file may end between a record's content and its two CRLFs: whole.
        boundary = cut in ends or (not gz and any(0 < cut - (e - 4) <= 4 for e in ends))
        if boundary:
            assert integrity.whole and integrity.records >= n, (cut, integrity)
        else:
            assert not integrity.whole, (cut, integrity)
            assert integrity.records == n and integrity.broken_offset == starts[n], cut
            assert f"record {n + 1}, offset {starts[n]}" in integrity.problem


def _cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _one_error_line(result, *needles):
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    [line] = result.stderr.strip().splitlines()
    for needle in needles:
        assert needle in line, line
    return line


def test_empty_truncated_and_non_warc_files_fail_audit_index_and_replay(tmp_path):
    whole = _six_pages(tmp_path)
    data = whole.read_bytes()
    starts = [e["offset"] for e in index(whole)]
    empty = tmp_path / "empty.warc.gz"
    empty.write_bytes(b"")
    half = tmp_path / "half.warc.gz"
    half.write_bytes(data[: (starts[2] + starts[3]) // 2])  # cut inside the third record
    tail = tmp_path / "tail.warc.gz"
    tail.write_bytes(data[:-3])  # the last record's gzip trailer is missing
    junk = tmp_path / "junk.warc.gz"
    junk.write_bytes(b"<html>not a warc</html>\n" * 20)
    plain = tmp_path / "plain.warc"
    plain.write_bytes(gzip.decompress(data)[:-300])  # an uncompressed WARC, cut short
    one_stream = tmp_path / "one-stream.warc.gz"  # gzip around the whole file
    one_stream.write_bytes(gzip.compress(gzip.decompress(data)))

    for command in ("audit", "index"):
        _one_error_line(_cli("recording", command, empty), str(empty), "empty")
        _one_error_line(_cli("recording", command, junk), str(junk), "not")
        third, sixth = f"record 3, offset {starts[2]}", f"record 6, offset {starts[5]}"
        _one_error_line(_cli("recording", command, half), str(half), third)
        _one_error_line(_cli("recording", command, tail), str(tail), sixth)
        _one_error_line(_cli("recording", command, plain), str(plain), "record 6")
        _one_error_line(_cli("recording", command, one_stream), "one gzip member per record")

    # --allow-truncated: the whole records, with a warning naming where it broke.
    kept = _cli("recording", "index", "--allow-truncated", tail)
    assert kept.exit_code == 0, kept.output
    assert [json.loads(x)["url"] for x in kept.stdout.splitlines()] == [
        f"{H}/p{i}" for i in range(5)
    ]
    assert "warning:" in kept.stderr and "record 6" in kept.stderr
    assert _cli("recording", "audit", "--allow-truncated", tail).exit_code == 0

    # Replay: refused before any run, exit 2 (was: exit 0, every run excluded, 0 scored).
    art = tmp_path / "art"
    for bad in (empty, half, junk):
        result = _cli("replay", "run", SUITE, "--recording", bad, "--artifacts", art)
        assert result.exit_code == 2 and str(bad) in result.output, result.output
        assert "scored runs" not in result.output
    with pytest.raises(RecordingError, match="record 6"):
        Recording(tail)
    assert [e.url for e in Recording(tail, allow_truncated=True).exchanges] == [
        f"{H}/p{i}" for i in range(5)
    ]
    # The library refuses them too, naming the file.
    for bad in (empty, half, junk):
        with pytest.raises(ValueError, match=str(bad)):
            audit(bad)


def test_payloads_decode_as_warcio_decodes_them(tmp_path):
    """The bounded decoder serves what warcio's content_stream did, for every framing a
    crawler writes (and for headers that lie about it)."""
    import zlib

    from warcio.archiveiterator import ArchiveIterator

    from newsbench_dagster.core.replay.warc import read_payload

    html = b"<html>" + b"harbor news " * 5000 + b"</html>"
    packed = gzip.compress(html)
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    bare = raw.compress(html) + raw.flush()

    def chunked(data: bytes, n: int = 1000) -> bytes:
        pieces = [data[i : i + n] for i in range(0, len(data), n)]
        parts = [b"%x\r\n%s\r\n" % (len(p), p) for p in pieces]
        return b"".join(parts) + b"0\r\n\r\n"

    ce, te = "Content-Encoding", ("Transfer-Encoding", "chunked")
    cases = [
        (html, []), (packed, [(ce, "gzip")]), (zlib.compress(html), [(ce, "deflate")]),
        (bare, [(ce, "deflate")]), (chunked(packed), [(ce, "gzip"), te]),
        (chunked(html), [te]), (html, [te]), (html, [(ce, "gzip")]), (html, [(ce, "br")]),
    ]  # fmt: skip
    path = write_warc(
        tmp_path / "framings.warc.gz",
        [page(f"{H}/{i}", body, headers=h) for i, (body, h) in enumerate(cases)],
    )
    with open(path, "rb") as f, open(path, "rb") as g:
        for theirs, ours in zip(ArchiveIterator(f), ArchiveIterator(g), strict=True):
            assert read_payload(ours, path) == theirs.content_stream().read() == html
