"""Recordings (issue 7, first part): the newsroom recorded by real Chromium into WARC 1.1
that warcio's own reader opens and indexes; secrets stripped before writing; the audit fails
a recording that still holds a cookie, an Authorization header or a bot-check page."""

from __future__ import annotations

import asyncio
import gzip
from io import BytesIO

import pytest
from typer.testing import CliRunner
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from newsbench_dagster.cli import app
from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.replay.audit import audit, index
from newsbench_dagster.core.replay.recorder import record
from newsbench_dagster.core.replay.redact import clean_url
from newsbench_dagster.core.web.network import Routing


@pytest.fixture(scope="module")
def recording(newsroom_server, tmp_path_factory):
    """The harbor front page and its newest article, recorded once for the module."""
    path = tmp_path_factory.mktemp("rec") / "harbor.warc.gz"
    options = BrowserOptions(routing=Routing.via_proxy(newsroom_server.address))
    summary = asyncio.run(record(["http://harbor-herald.test/"], path, options, settle_ms=200))
    return path, summary


def test_the_recording_is_standard_warc_that_warcio_reads_and_indexes(recording):
    path, summary = recording
    assert summary.pages == ["http://harbor-herald.test/"] and summary.exchanges >= 1
    with open(path, "rb") as f:
        records = [
            (r.rec_headers.protocol, r.rec_type, r.rec_headers.get_header("WARC-Target-URI"))
            for r in ArchiveIterator(f)
        ]
    assert {p for p, _, _ in records} == {"WARC/1.1"}
    kinds = [t for _, t, _ in records]
    assert kinds[0] == "warcinfo" and "response" in kinds and "request" in kinds
    assert ("WARC/1.1", "response", "http://harbor-herald.test/") in records
    # The index's offsets open each record on its own (random access, as replay needs).
    entries = index(path)
    front = next(e for e in entries if e["type"] == "response" and e["url"].endswith(".test/"))
    with open(path, "rb") as f:
        f.seek(front["offset"])
        rec = next(iter(ArchiveIterator(f)))
        assert rec.rec_headers.get_header("WARC-Target-URI") == "http://harbor-herald.test/"
        assert b"<html" in rec.content_stream().read().lower()
    # The timeline and the recording clock are in the file.
    assert [e["type"] for e in entries].count("metadata") == 4  # 2 site files, nav, load
    # The timeline is not filed under the pages' own URIs (pywb would serve it as the page).
    meta = [e["url"] for e in entries if e["type"] == "metadata"]
    assert all(u.startswith("urn:newsbench:timeline:") for u in meta)
    # What replay needs besides the pages: the site's robots.txt and its own 404 page.
    statuses = {e["url"]: e.get("status") for e in entries if e["type"] == "response"}
    assert statuses["http://harbor-herald.test/robots.txt"] == "200"
    assert statuses["http://harbor-herald.test/.newsbench-recorder-not-found"] == "404"
    with open(path, "rb") as f:
        info = next(iter(ArchiveIterator(f))).content_stream().read().decode()
    assert "recording-clock: " + summary.started_at in info


def test_secrets_are_stripped_before_writing_and_the_audit_passes(recording):
    path, summary = recording
    assert summary.stripped_headers >= 1  # the newsroom sets a reader cookie
    with gzip.open(path) as f:
        raw = f.read().lower()
    assert b"set-cookie" not in raw and b"\ncookie:" not in raw
    assert audit(path) == []


def _warc(tmp_path, name: str, records: list[tuple[str, list, bytes, str]]):
    path = tmp_path / name
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True, warc_version="WARC/1.1")
        for kind, headers, body, status in records:
            http = StatusAndHeaders(
                status, headers, protocol="HTTP/1.1", is_http_request=kind == "request"
            )
            w.write_record(
                w.create_warc_record(
                    "http://harbor-herald.test/",
                    kind,
                    payload=BytesIO(body),
                    length=len(body),
                    http_headers=http,
                )
            )
    return path


def test_the_audit_fails_a_recording_with_a_cookie_or_an_authorization_header(tmp_path):
    leaky = _warc(
        tmp_path,
        "leaky.warc.gz",
        [
            (
                "request",
                [("Cookie", "nb_reader=abc"), ("Authorization", "Bearer x")],
                b"",
                "GET / HTTP/1.1",
            ),
            ("response", [("Content-Type", "text/html")], b"<html>ok</html>", "200 OK"),
        ],
    )
    kinds = sorted(f.kind for f in audit(leaky))
    assert kinds == ["authorization", "cookie"]
    result = CliRunner().invoke(app, ["recording", "audit", str(leaky)])
    assert result.exit_code == 1 and "Authorization header" in result.stdout


def test_the_audit_fails_a_bot_check_page_and_passes_a_clean_one(tmp_path):
    wall = _warc(
        tmp_path,
        "wall.warc.gz",
        [
            (
                "response",
                [("Content-Type", "text/html")],
                b'<html><div class="g-recaptcha"></div>Are you a robot?</html>',
                "200 OK",
            )
        ],
    )
    assert [f.kind for f in audit(wall)] == ["bot_check"]
    clean = _warc(
        tmp_path,
        "clean.warc.gz",
        [("response", [("Content-Type", "text/html")], b"<html>news</html>", "200 OK")],
    )
    assert audit(clean) == []
    assert CliRunner().invoke(app, ["recording", "audit", str(clean)]).exit_code == 0
    bad = tmp_path / "not.warc.gz"
    bad.write_bytes(b"not a warc at all")
    broken = CliRunner().invoke(app, ["recording", "audit", str(bad)])
    assert broken.exit_code == 2 and "not.warc.gz" in broken.output


def test_credential_values_and_emails_in_urls_are_redacted():
    url, n = clean_url("http://x.test/a?id=7&session_id=s3cr3t&email=a%40b.org&utm_source=rss")
    assert n == 2 and "s3cr3t" not in url and "a%40b.org" not in url
    assert "id=7" in url and "utm_source=rss" in url
    assert clean_url("http://x.test/a?page=2") == ("http://x.test/a?page=2", 0)


def _session_file(path, pages: dict[str, bytes]):
    from newsbench_dagster.core.replay.recorder import WarcRecorder

    rec = WarcRecorder(path)
    for url, body in pages.items():
        rec.exchange("GET", url, [], None, 200, "OK", [("Content-Type", "text/html")], body)
    rec.close()
    return path


def test_two_sessions_merge_the_earlier_copy_winning_and_the_merge_is_reported(tmp_path):
    from newsbench_dagster.core.replay.merge import merge
    from newsbench_dagster.core.replay.replayer import Recording

    h = "http://harbor-herald.test"
    first = _session_file(tmp_path / "monday.warc.gz", {f"{h}/": b"monday front", f"{h}/a": b"A"})
    second = _session_file(
        tmp_path / "tuesday.warc.gz",
        {f"{h}/": b"tuesday front", f"{h}/a": b"A", f"{h}/b": b"B"},
    )
    out = tmp_path / "merged.warc.gz"
    # The order the files are given in does not matter: the recording clocks decide.
    report = merge(second, first, out)
    assert report.earlier == str(first) and report.later == str(second)
    assert (report.kept, report.added, report.duplicates) == (2, 1, 2)
    assert report.changed == [f"{h}/"]  # the front page changed between the sessions
    assert audit(out) == []
    recording = Recording(out)
    bodies = {e.url: recording.payload(e).body for e in recording.exchanges}
    assert bodies == {f"{h}/": b"monday front", f"{h}/a": b"A", f"{h}/b": b"B"}
    with open(out, "rb") as f:
        assert {r.rec_headers.protocol for r in ArchiveIterator(f)} == {"WARC/1.1"}


def test_recording_merge_command_reports_and_refuses_junk(tmp_path):
    h = "http://harbor-herald.test"
    a = _session_file(tmp_path / "a.warc.gz", {f"{h}/": b"one"})
    b = _session_file(tmp_path / "b.warc.gz", {f"{h}/": b"two", f"{h}/x": b"x"})
    out = tmp_path / "m.warc.gz"
    result = CliRunner().invoke(app, ["recording", "merge", str(a), str(b), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "1 added" in result.output and "1 duplicate" in result.output
    assert "changed" in result.output and f"{h}/" in result.output
    junk = tmp_path / "junk.warc.gz"
    junk.write_bytes(b"not a warc at all")
    result = CliRunner().invoke(app, ["recording", "merge", str(a), str(junk), "--out", str(out)])
    assert result.exit_code == 2 and "junk.warc.gz" in result.output


def test_personal_data_in_request_bodies_is_redacted_and_the_audit_catches_leftovers(tmp_path):
    from newsbench_dagster.core.replay.recorder import WarcRecorder
    from newsbench_dagster.core.replay.redact import clean_body

    form = b"newsletter=morning&email=reader%40example.com&csrf=abc"
    cleaned, n = clean_body(form)
    assert n == 1 and b"example.com" not in cleaned and b"newsletter=morning" in cleaned
    doc, n = clean_body(b'{"user": {"email": "a@b.test", "api_key": "k1"}, "q": "bridge"}')
    assert n == 2 and b"a@b.test" not in doc and b"k1" not in doc and b"bridge" in doc

    path = tmp_path / "post.warc.gz"
    rec = WarcRecorder(path)
    rec.exchange("POST", "http://harbor-herald.test/newsletter", [], form, 200, "OK", [], b"ok")
    rec.close()
    assert audit(path) == []
    with open(path, "rb") as f:
        bodies = [r.content_stream().read() for r in ArchiveIterator(f) if r.rec_type == "request"]
    assert bodies == [cleaned]

    # A WARC from elsewhere that kept the reader's e-mail in a POST body fails the audit.
    raw = tmp_path / "raw.warc.gz"
    with open(raw, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        req = writer.create_warc_record(
            "http://harbor-herald.test/newsletter",
            "request",
            payload=BytesIO(form),
            length=len(form),
            http_headers=StatusAndHeaders(
                "POST /newsletter HTTP/1.1", [("Host", "harbor-herald.test")], is_http_request=True
            ),
        )
        writer.write_record(req)
    [finding] = audit(raw)
    assert finding.kind == "personal_data"


def test_a_url_the_recorder_redacted_passes_the_audit_and_a_raw_one_fails(tmp_path):
    from newsbench_dagster.core.replay.recorder import WarcRecorder

    path = tmp_path / "token.warc.gz"
    rec = WarcRecorder(path)
    secret_url = "http://harbor-herald.test/account?session_id=s3cr3t&page=2"
    rec.exchange("GET", secret_url, [], None, 200, "OK", [("Content-Type", "text/html")], b"ok")
    rec.close()
    urls = [e["url"] for e in index(path) if e["type"] in ("request", "response")]
    assert urls and all("s3cr3t" not in u and "session_id=redacted" in u for u in urls)
    assert audit(path) == []

    raw = tmp_path / "raw.warc.gz"
    with open(raw, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write_record(
            writer.create_warc_record(
                secret_url, "response", payload=BytesIO(b"ok"), length=2, http_headers=http
            )
        )
    [finding] = audit(raw)
    assert finding.kind == "credential_param"


def test_a_request_routed_after_the_batch_closed_its_client_is_aborted_quietly():
    """`record --agent` ended, about one time in two, with an "Error occurred in event
    listener" traceback: a closing page's last request reached the capture after the batch
    had closed its HTTP client. It is aborted, not sent, and nothing is raised."""
    import asyncio

    from playwright.async_api import Error as PlaywrightError

    from newsbench_dagster.core.replay.recorder import capture
    from newsbench_dagster.core.web.network import async_client

    class Route:
        aborted: list[str] = []

        class request:  # noqa: N801 - Playwright's attribute
            method, url, post_data_buffer = "GET", "http://harbor-herald.test/x.js", None

            @staticmethod
            def is_navigation_request():
                return False

            @staticmethod
            async def all_headers():
                return {}

        async def abort(self, code="failed"):
            self.aborted.append(code)
            raise PlaywrightError("Target page, context or browser has been closed")

    async def late() -> list[str]:
        client = async_client(timeout=5)
        await client.aclose()
        route = Route()
        await capture(route, recorder=None, client=client)
        return route.aborted

    assert asyncio.run(late()) == ["connectionfailed"]
