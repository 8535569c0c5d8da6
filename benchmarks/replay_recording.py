"""The recording `replay_bench.py` replays: what is recorded from the frozen newsroom (harbor's
front page, articles and searches), the synthetic exchanges no page makes (a ticker recorded
three times, a newsletter POST), the one WARC they make, and the same exchanges as a HAR 1.2
file for Playwright's `route_from_har`. Not a benchmark itself (no `__main__`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from email.utils import format_datetime
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from common import FROZEN_AT

from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.replay.recorder import WarcRecorder
from newsbench_dagster.core.replay.replayer import Recording

HARBOR = "http://harbor-herald.test"
ARTICLE = re.compile(r"^/news/([^/]+)/(.+)-(\d+)$")
# Recorded query -> asked again re-ordered, and with one word changed (Jaccard 2/4 = 0.5).
SEARCHES = {
    "harbor storm warning": ["warning storm harbor", "harbor storm alert"],
    "council budget vote": ["vote budget council", "council budget debate"],
    "ferry schedule changes": ["changes ferry schedule", "ferry timetable changes"],
    "school lunch program": ["program lunch school", "school lunch menu"],
}
TICKER = f"{HARBOR}/fragments/ticker"
TICKS = [b"tick 1", b"tick 2", b"tick 3"]
NEWSLETTER = f"{HARBOR}/newsletter"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
SIGNUP = "newsletter=morning&email=reader%40example.com"
SIGNUP_BODY = b"Subscribed reader@example.com to: morning"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- the benchmark WARC ------------------------------------------------------------------------
async def article_urls(options: BrowserOptions, n: int) -> list[str]:
    """Article URLs linked from the front page, then from the section pages, up to `n`."""
    from playwright.async_api import async_playwright

    found: list[str] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(**options.launch_kwargs())
        page = await (await browser.new_context(**options.context_kwargs())).new_page()
        queue, seen = [f"{HARBOR}/"], set()
        while queue and len(found) < n:
            where = queue.pop(0)
            seen.add(where)
            await page.goto(where, wait_until="load")
            hrefs = await page.eval_on_selector_all('a[href*="/news/"]', "a => a.map(e => e.href)")
            for href in hrefs:
                href = href.split("#")[0]
                if urlsplit(href).netloc != urlsplit(HARBOR).netloc:
                    continue
                path = urlsplit(href).path
                if ARTICLE.match(path) and href not in found:
                    found.append(href)
                elif path.count("/") == 3 and path.endswith("/") and href not in seen:
                    queue.append(href)  # a section page: more articles
        await browser.close()
    return found[:n]


def search_url(query: str) -> str:
    return f"{HARBOR}/search?{urlencode({'q': query})}"


def write_synthetic(path: Path) -> None:
    """The exchanges no page makes: a ticker recorded 3 times, a newsletter signup POST."""
    date = format_datetime(FROZEN_AT, usegmt=True)
    plain = [("Content-Type", "text/plain; charset=utf-8"), ("Date", date)]
    w = WarcRecorder(path, {"note": "replay_bench synthetic exchanges"})
    for body in TICKS:
        headers = [*plain, ("Cache-Control", "no-store")]
        w.exchange("GET", TICKER, [("Accept", "*/*")], None, 200, "OK", headers, body)
    w.exchange(
        "POST", NEWSLETTER, list(FORM.items()), SIGNUP.encode(), 200, "OK", plain, SIGNUP_BODY
    )
    w.close()


def concat(out: Path, *parts: Path) -> None:
    """WARC files gzipped per record concatenate into one valid WARC."""
    with open(out, "wb") as f:
        for p in parts:
            f.write(p.read_bytes())


def write_har(rec: Recording, out: Path) -> int:
    """A HAR 1.2 file with every exchange of the recording (bodies base64, headers as replayed
    by ours: transfer headers dropped), in recorded order."""
    entries = []
    for ex in rec.exchanges:
        payload = rec.payload(ex)
        parts = urlsplit(ex.url)
        request: dict = {
            "method": ex.method,
            "url": ex.url,
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": [{"name": "Host", "value": parts.netloc}],
            "queryString": [],
            "headersSize": -1,
            "bodySize": len(ex.body),
        }
        if ex.body:
            request["postData"] = {
                "mimeType": FORM["Content-Type"],
                "text": ex.body.decode("utf-8", "replace"),
                "params": [],
            }
        ctype = next((v for k, v in payload.headers if k.lower() == "content-type"), "")
        location = next((v for k, v in payload.headers if k.lower() == "location"), "")
        entries.append(
            {
                "startedDateTime": ex.date or rec.clock.isoformat(),
                "time": 1,
                "request": request,
                "response": {
                    "status": payload.status,
                    "statusText": "",
                    "httpVersion": "HTTP/1.1",
                    "cookies": [],
                    "headers": [{"name": k, "value": v} for k, v in payload.headers],
                    "content": {
                        "size": len(payload.body),
                        "mimeType": ctype or "application/octet-stream",
                        "text": base64.b64encode(payload.body).decode(),
                        "encoding": "base64",
                    },
                    "redirectURL": location,
                    "headersSize": -1,
                    "bodySize": len(payload.body),
                },
                "cache": {},
                "timings": {"send": 0, "wait": 1, "receive": 0},
            }
        )
    har = {
        "log": {
            "version": "1.2",
            "creator": {"name": "newsbench replay_bench", "version": "0.1"},
            "pages": [],
            "entries": entries,
        }
    }
    out.write_text(json.dumps(har), encoding="utf-8")
    return len(entries)
