"""Recording: real pages captured once, as standard WARC 1.1, for offline replay.

`record` drives Chromium through start URLs and writes every request and response it
answers, with a page timeline (metadata records) and the recording clock (the warcinfo's
`recording-clock`, and each record's WARC-Date); `capture` records a live run from its route
handler. Nothing secret is written (`core.replay.redact`): what was stripped is counted in
the summary, never kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from io import BytesIO
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from warcio.statusandheaders import StatusAndHeaders

from newsbench_dagster.core.replay.redact import SECRET_HEADERS, clean_body, clean_url
from newsbench_dagster.core.replay.warc import warc_writer

# Asked of every recorded site so that the recording holds the site's own 404 page.
NOT_FOUND_PATH = "/.newsbench-recorder-not-found"
# Headers that describe the bytes on the wire, not the (decoded) body the recording keeps.
_WIRE_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length"})
# Request headers the capturing client sets itself (it decodes what it asks to be encoded).
_NOT_FORWARDED = frozenset(
    {"host", "content-length", "accept-encoding", "connection", "proxy-connection"}
)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


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
        started = datetime.now(UTC)
        self.summary = RecordingSummary(str(self.path), started.isoformat())
        self._writer = warc_writer(self._file, self.path.name, started.isoformat(), info)

    def _record(self, uri: str, rec_type: str, body: bytes, **kwargs):
        """A record of `body`, not yet written."""
        return self._writer.create_warc_record(
            uri, rec_type, payload=BytesIO(body), length=len(body), **kwargs
        )

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
        response = self._record(
            url,
            "response",
            body,
            http_headers=StatusAndHeaders(
                f"{status} {reason or ''}".strip(), resp_headers, protocol="HTTP/1.1"
            ),
        )
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "") or "/"
        req_body = request_body or b""
        request = self._record(
            url,
            "request",
            req_body,
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
        record = self._record(
            f"urn:newsbench:timeline:{url}",
            "metadata",
            body,
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
    """Load each start URL in Chromium (`options`: a `core.harness.browser.BrowserOptions`)
    and write every request the pages make, and its response, to `out`."""
    from playwright.async_api import Error as PlaywrightError

    from newsbench_dagster.core.harness.browser import playwright

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
        async with playwright() as pw:
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

    if client.is_closed:
        # The batch is over: a closing page's last request is neither recorded nor sent.
        await _abort_quietly(route)
        return
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
        except RuntimeError:
            if not client.is_closed:
                raise
            await _abort_quietly(route)  # closed while this request waited its turn
            return
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


async def _abort_quietly(route) -> None:
    """Abort a request whose page may be closing (then there is nothing left to abort)."""
    from playwright.async_api import Error as PlaywrightError

    with contextlib.suppress(PlaywrightError):
        await route.abort("connectionfailed")
