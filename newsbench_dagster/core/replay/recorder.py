"""Recordings: real pages captured once, as standard WARC 1.1 (warcio), for offline replay.

The recorder drives Chromium through start URLs and writes every request and response it
answers, with a page timeline (metadata records) and the recording clock (the warcinfo's
`recording-clock`, and each record's WARC-Date). Nothing secret is written: cookies,
authorization headers and credential-like query values are stripped before a byte reaches
the file, and what was stripped is counted, never kept. `audit` re-reads a recording and
fails it if a secret remains or a page is a bot-check / CAPTCHA page (a recording of the
wall, not of the site).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from io import BytesIO
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

WARC_VERSION = "WARC/1.1"
# Headers that carry who the reader is: never recorded.
SECRET_HEADERS = frozenset(
    {
        "cookie",
        "set-cookie",
        "set-cookie2",
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "x-auth-token",
        "x-csrf-token",
        "x-xsrf-token",
    }
)
# Query parameters whose value is a credential or identifies the reader.
_SECRET_PARAM = re.compile(
    r"(token|secret|passw|api[_-]?key|apikey|session|sessid|signature|credential"
    r"|^(sid|sig|key)$|(^|[_-])auth($|[_-]|orization))",
    re.I,
)  # "auth" as a word of the name only: `author` is content, not a credential
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
REDACTED = "redacted"
# Asked of every recorded site so that the recording holds the site's own 404 page.
NOT_FOUND_PATH = "/.newsbench-recorder-not-found"
# Headers that describe the bytes on the wire, not the (decoded) body the recording keeps.
_WIRE_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length"})
# Request headers the capturing client sets itself (it decodes what it asks to be encoded).
_NOT_FORWARDED = frozenset(
    {"host", "content-length", "accept-encoding", "connection", "proxy-connection"}
)
# A bot wall or CAPTCHA instead of the page: markers of the common challenge pages.
_BOT_CHECK = re.compile(
    r"(g-recaptcha|h-captcha|hcaptcha\.com|cf-challenge|challenge-platform|cf_chl_|"
    r"are you a robot|verify you are (a )?human|unusual traffic from your computer|"
    r"px-captcha|datadome)",
    re.I,
)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def clean_url(url: str) -> tuple[str, int]:
    """The URL with credential-like query values and e-mail addresses redacted; and how
    many values were."""
    parts = urlsplit(url)
    if not parts.query:
        return url, 0
    pairs, n = [], 0
    for k, v in parse_qsl(parts.query, keep_blank_values=True):
        if v and (_SECRET_PARAM.search(k) or _EMAIL.search(v)):
            v, n = REDACTED, n + 1
        pairs.append((k, v))
    return (urlunsplit(parts._replace(query=urlencode(pairs))) if n else url), n


def clean_body(body: bytes | None) -> tuple[bytes, int]:
    """A request body with personal data and credentials redacted (form fields and JSON
    values named like a secret, and e-mail addresses anywhere); and how many values were.
    Replay keys live requests through the same function, so a redacted field still
    matches its recording."""
    if not body:
        return b"", 0
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return body, 0  # binary uploads are kept as sent
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            doc = json.loads(stripped)
        except ValueError:
            doc = None
        if doc is not None:
            count = [0]

            def walk(v, key=""):
                if isinstance(v, dict):
                    return {k: walk(x, k) for k, x in v.items()}
                if isinstance(v, list):
                    return [walk(x, key) for x in v]
                if isinstance(v, str) and v and (_SECRET_PARAM.search(key) or _EMAIL.search(v)):
                    count[0] += 1
                    return REDACTED
                return v

            cleaned = walk(doc)
            return (json.dumps(cleaned).encode() if count[0] else body), count[0]
    if "=" in text and " " not in stripped:
        pairs, n = [], 0
        for k, v in parse_qsl(text, keep_blank_values=True):
            if v and (_SECRET_PARAM.search(k) or _EMAIL.search(v)):
                v, n = REDACTED, n + 1
            pairs.append((k, v))
        return (urlencode(pairs).encode() if n else body), n
    cleaned, n = _EMAIL.subn(REDACTED, text)
    return (cleaned.encode() if n else body), n


@dataclass
class RecordingSummary:
    path: str
    started_at: str
    exchanges: int = 0
    pages: list[str] = field(default_factory=list)
    stripped_headers: int = 0
    redacted_params: int = 0
    failures: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class WarcRecorder:
    """Writes exchanges to a gzipped WARC 1.1 file, secrets stripped first."""

    def __init__(self, path: str | Path, info: dict | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        self._writer = WARCWriter(self._file, gzip=True, warc_version=WARC_VERSION)
        started = datetime.now(UTC)
        self.summary = RecordingSummary(str(self.path), started.isoformat())
        record = self._writer.create_warcinfo_record(
            self.path.name,
            {
                "software": "newsbench recorder (warcio)",
                "format": "WARC File Format 1.1",
                "recording-clock": started.isoformat(),
                **(info or {}),
            },
        )
        self._writer.write_record(record)

    def exchange(
        self,
        method: str,
        url: str,
        request_headers: list[tuple[str, str]],
        request_body: bytes | None,
        status: int,
        reason: str,
        response_headers: list[tuple[str, str]],
        body: bytes,
    ) -> None:
        url, n_params = clean_url(url)
        request_body, n_body = clean_body(request_body)
        n_params += n_body
        req_headers = [(k, v) for k, v in request_headers if k.lower() not in SECRET_HEADERS]
        resp_headers = [
            (k, v)
            for k, v in response_headers
            if k.lower() not in SECRET_HEADERS and k.lower() not in _WIRE_HEADERS
        ]
        self.summary.stripped_headers += (len(request_headers) - len(req_headers)) + sum(
            k.lower() in SECRET_HEADERS for k, _ in response_headers
        )
        self.summary.redacted_params += n_params
        resp_headers.append(("Content-Length", str(len(body))))
        response = self._writer.create_warc_record(
            url,
            "response",
            payload=BytesIO(body),
            length=len(body),
            http_headers=StatusAndHeaders(
                f"{status} {reason or ''}".strip(), resp_headers, protocol="HTTP/1.1"
            ),
        )
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "") or "/"
        req_body = request_body or b""
        request = self._writer.create_warc_record(
            url,
            "request",
            payload=BytesIO(req_body),
            length=len(req_body),
            http_headers=StatusAndHeaders(
                f"{method} {target} HTTP/1.1",
                [("Host", parts.netloc), *[(k, v) for k, v in req_headers if k.lower() != "host"]],
                is_http_request=True,
            ),
        )
        request.rec_headers.add_header(
            "WARC-Concurrent-To", response.rec_headers.get_header("WARC-Record-ID")
        )
        self._writer.write_record(response)
        self._writer.write_record(request)
        self.summary.exchanges += 1

    def timeline(self, page_url: str, entry: dict) -> None:
        """A page event (navigation, load, failure) as a metadata record, on the recording
        clock (`t` seconds since the recording started)."""
        url, _ = clean_url(page_url)
        body = json.dumps({"page": url, **entry}, default=str).encode()
        # Not the page's own URI: replay tools (pywb) would serve this record as the page.
        record = self._writer.create_warc_record(
            f"urn:newsbench:timeline:{url}",
            "metadata",
            payload=BytesIO(body),
            length=len(body),
            warc_content_type="application/json",
        )
        self._writer.write_record(record)

    def close(self) -> RecordingSummary:
        self._file.close()
        return self.summary


async def record(
    urls: Sequence[str],
    out: str | Path,
    options,
    *,
    settle_ms: int = 500,
    info: dict | None = None,
    site_files: bool = True,
    idle_timeout_ms: int = 5_000,
    until_closed: bool = False,
) -> RecordingSummary:
    """Load each start URL in Chromium (`options`: a `core.browser.BrowserOptions`) and write
    every request the pages make, and its response, to `out`."""
    from playwright.async_api import Error as PlaywrightError
    from playwright.async_api import async_playwright

    recorder = WarcRecorder(out, info)
    t0 = asyncio.get_running_loop().time()

    def clock() -> float:
        return round(asyncio.get_running_loop().time() - t0, 3)

    pending: set[asyncio.Task] = set()

    async def keep(req) -> None:
        # What the browser itself fetched (its resolver, proxy and cache rules), read after
        # the fact: the recorder never fetches anything the page did not.
        try:
            resp = await req.response()
            if resp is None:
                return
            try:
                body = await resp.body()
            except PlaywrightError as e:
                if not 300 <= resp.status < 400:  # a redirect has no body; anything else
                    # without one would replay as an empty page: left out, and said so.
                    recorder.summary.failures.append(
                        {"url": req.url, "error": f"body unavailable: {str(e)[:150]}"}
                    )
                    return
                body = b""
            recorder.exchange(
                req.method,
                req.url,
                list((await req.all_headers()).items()),
                req.post_data_buffer,
                resp.status,
                resp.status_text,
                [(h["name"], h["value"]) for h in await resp.headers_array()],
                body,
            )
        except PlaywrightError as e:
            recorder.summary.failures.append({"url": req.url, "error": str(e)[:200]})

    async def drain() -> None:
        while pending:
            await asyncio.gather(*list(pending))

    def on_finished(req) -> None:
        task = asyncio.ensure_future(keep(req))
        pending.add(task)
        task.add_done_callback(pending.discard)

    def on_failed(req) -> None:
        recorder.summary.failures.append({"url": req.url, "error": req.failure or "failed"})

    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(**options.launch_kwargs())
            context = await browser.new_context(**options.context_kwargs())
            context.on("requestfinished", on_finished)
            context.on("requestfailed", on_failed)
            page = await context.new_page()
            if site_files:
                # What replay needs of each site besides the pages: its robots.txt (the rules
                # a replayed run obeys) and its 404 page (the answer to what was not recorded).
                for origin in dict.fromkeys(_origin(u) for u in urls):
                    for path in ("/robots.txt", NOT_FOUND_PATH):
                        try:
                            resp = await page.goto(origin + path, wait_until="load")
                            await drain()
                            status = resp.status if resp else None
                            entry = {"event": "site_file", "status": status, "t": clock()}
                            recorder.timeline(origin + path, entry)
                        except PlaywrightError as e:
                            recorder.summary.failures.append(
                                {"url": origin + path, "error": str(e)[:200]}
                            )
            for url in urls:
                recorder.timeline(url, {"event": "navigate", "url": url, "t": clock()})
                try:
                    resp = await page.goto(url, wait_until="load")
                    # Lazy fragments and calls the page makes after load belong to the page:
                    # leaving early would cancel them and leave holes in the recording.
                    with contextlib.suppress(PlaywrightError):
                        await page.wait_for_load_state("networkidle", timeout=idle_timeout_ms)
                    await page.wait_for_timeout(settle_ms)
                    await drain()  # bodies are read before the next navigation discards them
                    recorder.timeline(
                        url,
                        {
                            "event": "loaded",
                            "url": page.url,
                            "status": resp.status if resp else None,
                            "title": await page.title(),
                            "t": clock(),
                        },
                    )
                    recorder.summary.pages.append(url)
                except PlaywrightError as e:
                    recorder.timeline(url, {"event": "failed", "error": str(e)[:200], "t": clock()})
                    recorder.summary.failures.append({"url": url, "error": str(e)[:200]})
            if until_closed:
                # A person browsing (a visible window): every page they open is recorded, with
                # its navigations on the timeline, until they close the last window.
                def on_nav(frame) -> None:
                    if frame.parent_frame is None:
                        recorder.timeline(frame.url, {"event": "navigated", "t": clock()})

                for p in context.pages:
                    p.on("framenavigated", on_nav)
                context.on("page", lambda p: p.on("framenavigated", on_nav))
                while open_pages := [p for p in context.pages if not p.is_closed()]:
                    with contextlib.suppress(PlaywrightError):
                        await open_pages[0].wait_for_event("close", timeout=0)
            await drain()  # bodies still being read
            await browser.close()
    finally:
        summary = recorder.close()
    return summary


async def capture(route, recorder: WarcRecorder, client) -> None:
    """A route handler's way to record a live run: the request the page made is sent on by
    `client` (an httpx.AsyncClient on the run's routing: same proxy, same world), its
    response written to the recording, then handed to the page. A navigation's redirect is
    recorded as such and re-routed, so its next hop is captured too (a fulfilled 3xx would
    be followed by the browser unseen); a sub-resource's chain is followed here."""
    import httpx

    req = route.request
    nav = req.is_navigation_request()
    sent = {
        k: v
        for k, v in (await req.all_headers()).items()
        if not k.startswith(":") and k.lower() not in _NOT_FORWARDED
    }
    body = req.post_data_buffer
    # A kept-alive connection the server has just closed fails the first read: a GET is
    # safe to send again once.
    tries = 2 if req.method in ("GET", "HEAD") else 1
    for attempt in range(tries):
        try:
            resp = await client.request(
                req.method, req.url, headers=sent, content=body, follow_redirects=not nav
            )
            break
        except httpx.HTTPError as e:
            if attempt + 1 < tries and isinstance(e, httpx.ReadError | httpx.RemoteProtocolError):
                continue
            recorder.summary.failures.append({"url": req.url, "error": f"{type(e).__name__}: {e}"})
            await route.abort("connectionfailed")
            return
    headers = list(resp.headers.multi_items())
    recorder.exchange(
        req.method,
        req.url,
        list(sent.items()),
        req.post_data_buffer,
        resp.status_code,
        resp.reason_phrase,
        headers,
        resp.content,
    )
    location = resp.headers.get("location")
    if nav and 300 <= resp.status_code < 400 and location:
        await route._impl_obj._redirect_navigation_request(urljoin(req.url, location))
        return
    await route.fulfill(
        status=resp.status_code,
        headers={k: v for k, v in resp.headers.items() if k.lower() not in _WIRE_HEADERS},
        body=resp.content,
    )


# -- reading ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Finding:
    offset: int
    url: str
    kind: str  # cookie | authorization | credential_param | bot_check
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} at offset {self.offset} ({self.url}): {self.detail}"


def _warc_records(f, path):
    """warcio's iterator, refusing what is not WARC (it reads junk as an ARC record)."""
    from warcio.exceptions import ArchiveLoadFailed

    it = ArchiveIterator(f)
    try:
        for rec in it:
            if rec.format != "warc":
                raise ValueError(f"{path}: not a WARC file (record read as {rec.format!r})")
            yield it, rec
    except ArchiveLoadFailed as e:
        raise ValueError(f"{path}: not a readable WARC file: {e}") from e


def index(path: str | Path) -> list[dict]:
    """One entry per record: type, target URI, date, offset and length in the file."""
    out = []
    with open(path, "rb") as f:
        for it, rec in _warc_records(f, path):
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
        for it, rec in _warc_records(f, path):
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


# -- merging ---------------------------------------------------------------------------------
def recording_clock(path: str | Path) -> str | None:
    """The `recording-clock` of a recording's warcinfo record (None: another tool's WARC)."""
    with open(path, "rb") as f:
        for _, rec in _warc_records(f, path):
            if rec.rec_type != "warcinfo":
                return None
            for line in rec.content_stream().read().decode("utf-8", "replace").splitlines():
                key, _, value = line.partition(":")
                if key == "recording-clock":
                    return value.strip()
    return None


def _session(path: str | Path) -> dict:
    """A recording's clock and its exchanges keyed by request: key -> [(response record id,
    payload digest)], in recorded order."""
    from newsbench_dagster.core.replay.matching import exchanges_from_warc

    exchanges = exchanges_from_warc(path)
    keys: dict[tuple, list[tuple[str | None, str | None]]] = {}
    for ex in exchanges:
        keys.setdefault((ex.method.upper(), ex.url, ex.body), []).append((ex.record_id, ex.digest))
    clock = recording_clock(path) or min((ex.date or "" for ex in exchanges), default="")
    return {"clock": clock, "keys": keys}


@dataclass
class MergeReport:
    out: str
    earlier: str
    later: str
    kept: int = 0  # exchanges of the earlier session
    added: int = 0  # exchanges only the later session has
    duplicates: int = 0  # in both: the earlier copy kept
    changed: list[str] = field(default_factory=list)  # duplicates whose bytes differed

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def merge(a: str | Path, b: str | Path, out: str | Path) -> MergeReport:
    """Two recording sessions of the same task as one WARC: every exchange of the earlier
    session (by recording clock), then the later session's exchanges for requests the
    earlier one never made. Where both hold a request the earlier copy wins, and the
    report says how many did and which of them had changed in between."""
    sa, sb = _session(a), _session(b)
    (first, fs), (second, ss) = sorted(((a, sa), (b, sb)), key=lambda x: x[1]["clock"])
    report = MergeReport(str(out), str(first), str(second), kept=sum(map(len, fs["keys"].values())))
    kept_ids: set[str] = set()
    for key, copies in ss["keys"].items():
        if key not in fs["keys"]:
            kept_ids |= {rid for rid, _ in copies}  # repeats of a new request, all in order
            report.added += len(copies)
            continue
        report.duplicates += len(copies)
        if {d for _, d in copies} != {d for _, d in fs["keys"][key]}:
            report.changed.append(key[1])
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as fo:
        writer = WARCWriter(fo, gzip=True, warc_version=WARC_VERSION)
        info = writer.create_warcinfo_record(
            Path(out).name,
            {
                "software": "newsbench recorder (warcio)",
                "format": "WARC File Format 1.1",
                "recording-clock": fs["clock"],
                "merged-from": f"{Path(first).name} (wins), {Path(second).name}",
            },
        )
        writer.write_record(info)
        for path, keep in ((first, None), (second, kept_ids)):
            with open(path, "rb") as f:
                for rec in ArchiveIterator(f):
                    if rec.rec_type == "warcinfo":
                        continue
                    h = rec.rec_headers
                    if keep is not None:
                        own = h.get_header("WARC-Record-ID")
                        to = h.get_header("WARC-Concurrent-To")
                        if rec.rec_type == "response" and own not in keep:
                            continue
                        if rec.rec_type == "request" and to is not None and to not in keep:
                            continue
                    writer.write_record(rec)
    return report
