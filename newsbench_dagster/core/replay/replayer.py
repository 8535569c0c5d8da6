"""Replay: a recording (WARC) as the whole web a run sees, with no live fallthrough, ever.

Every request a replayed context makes is answered here, from the recording: the recorded
response the rules match (`core.replay.matching.Matcher`), a 204 for analytics and beacons, the
site's recorded 404 page (or a plain 404) for what was not recorded, and a name-resolution
failure for any host the recording does not hold. The browser it runs in resolves no host
at all (`Routing.offline()`), so even a request that escaped interception could not leave
the machine. Pages see the recording's clock (Playwright's clock API, started at the
moment the entry page was recorded and running from there), so countdowns and "5 minutes
ago" behave as recorded. Every decision lands in the session's log, tagged.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from protego import Protego

from newsbench_dagster.core.replay.matching import Matcher, Rules, coverage
from newsbench_dagster.core.replay.redact import SECRET_HEADERS
from newsbench_dagster.core.replay.warc import (
    Exchange,
    PayloadTooLarge,
    check_warc,
    exchanges_from_warc,
    record_at,
    recording_clock,
)
from newsbench_dagster.core.web.network import RobotsRules

# Not forwarded to the page: the body served is the decoded one, its length is recomputed.
_HOP_HEADERS = frozenset(
    {"content-encoding", "transfer-encoding", "content-length", "connection", "keep-alive"}
)
MAX_REDIRECTS = 10


class RecordingError(ValueError):
    """A recording that cannot be replayed (missing, not WARC, empty, truncated, nothing
    servable in it)."""


@dataclass(frozen=True)
class Payload:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


PLAIN_404 = Payload(
    404, [("Content-Type", "text/plain; charset=utf-8")], b"Not in the recording.\n"
)


def _parse_date(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


class Recording:
    """A WARC opened for replay: its exchanges, the rules, the hosts it holds, its robots.txt
    files, 404 pages and clock. Payloads are read from the file at their offsets once, then
    kept (a recording is a few MB; none is decoded beyond `MAX_PAYLOAD_BYTES`).

    A truncated file is refused unless `allow_truncated`: then its whole records are
    replayed and `warnings` says where it broke. A recorded response that cannot be served
    (over the payload limit, a revisit whose original is absent) is answered as a miss
    naming why, and listed in `refused`."""

    def __init__(
        self, path: str | Path, rules_files: tuple[str, ...] = (), allow_truncated: bool = False
    ) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise RecordingError(f"recording not found: {self.path}")
        self.warnings: list[str] = []
        try:
            integrity = check_warc(self.path)
            if not integrity.whole:
                if not allow_truncated:
                    raise RecordingError(integrity.problem)
                self.warnings.append(f"{integrity.problem} (replaying the whole records only)")
            self.exchanges: list[Exchange] = exchanges_from_warc(self.path, allow_truncated=True)
        except (OSError, ValueError) as e:
            said = str(e) if str(self.path) in str(e) else f"{self.path}: not replayable: {e}"
            raise RecordingError(said) from e
        if not self.exchanges:
            raise RecordingError(f"{self.path}: holds no responses to replay")
        self.refused = [ex.refused for ex in self.exchanges if ex.refused]
        if len(self.refused) == len(self.exchanges):
            revisits = sum(ex.refused_kind == "unresolved_revisit" for ex in self.exchanges)
            if revisits == len(self.refused):
                raise RecordingError(
                    f"{self.path}: holds only revisit records ({revisits}) whose originals are "
                    "not in it (a deduplicated crawl): nothing to replay without the WARC "
                    "holding the originals"
                )
            raise RecordingError(f"{self.refused[0]}; nothing else in the recording to serve")
        try:
            self.rules = Rules.load(*rules_files)
        except (OSError, ValueError) as e:
            raise RecordingError(f"replay rules {list(rules_files)}: {e}") from e
        self.rules_files = tuple(str(r) for r in rules_files)
        self.hosts = {urlsplit(e.url).netloc.lower() for e in self.exchanges}
        digest = hashlib.sha256()
        with open(self.path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
        self.sha256 = digest.hexdigest()
        self.allow_truncated = allow_truncated
        self.clock = self._read_clock()
        self._payloads: dict[int, Payload] = {}  # by response offset
        self._robots: RobotsRules | None = None

    @classmethod
    def open(
        cls, path: str | Path, rules_files: tuple[str, ...] = (), allow_truncated: bool = False
    ) -> Recording:
        """One parsed recording per file version and rules, shared by every run."""
        p = Path(path).resolve()
        stat = p.stat() if p.exists() else None
        rules = tuple(str(r) for r in rules_files)
        return _open(str(p), stat.st_mtime_ns if stat else 0, rules, allow_truncated)

    def _read_clock(self) -> datetime:
        if when := _parse_date(recording_clock(self.path, allow_truncated=self.allow_truncated)):
            return when
        dates = [d for e in self.exchanges if (d := _parse_date(e.date))]
        return min(dates) if dates else datetime.now(UTC)

    def holds(self, url: str) -> bool:
        """Whether the recording has anything of `url`'s host."""
        return urlsplit(url).netloc.lower() in self.hosts

    def clock_at(self, url: str | None) -> datetime:
        """The time `url` was served at: its first recorded response's HTTP Date (the
        site's own clock), else when it was captured (WARC-Date), else when the recording
        started."""
        for ex in self.exchanges:
            if not url or ex.url != url:
                continue
            served = next((v for k, v in self.payload(ex).headers if k.lower() == "date"), None)
            try:
                when = parsedate_to_datetime(served) if served else None
            except (TypeError, ValueError):
                when = None
            if when := when or _parse_date(ex.date):
                return when if when.tzinfo else when.replace(tzinfo=UTC)
        return self.clock

    def payload(self, ex: Exchange) -> Payload:
        """What is served for a recorded response (a refused one: a 404 saying why)."""
        if ex.refused:
            return Payload(
                404,
                [("Content-Type", "text/plain; charset=utf-8")],
                f"Not replayable: {ex.refused}\n".encode(),
            )
        if ex.response not in self._payloads:
            try:
                self._payloads[ex.response] = self._read(int(ex.response), ex.body_at)
            except PayloadTooLarge as e:  # read at open time; a file changed under us
                return Payload(502, [("Content-Type", "text/plain")], str(e).encode())
        return self._payloads[ex.response]

    def _read(self, offset: int, body_at: int | None = None) -> Payload:
        http, body = record_at(self.path, offset)
        if body_at is not None:  # a revisit: its own headers, its original's payload
            body = record_at(self.path, body_at)[1]
        if http is None:
            return Payload(200, [], body)
        # Another tool's WARC may hold a recorded reader's cookies: never handed to this one.
        headers = [
            (k, v)
            for k, v in http.headers
            if k.lower() not in _HOP_HEADERS and k.lower() not in SECRET_HEADERS
        ]
        return Payload(int(http.get_statuscode() or 200), headers, body)

    def not_found(self, host: str) -> Payload:
        """The site's own recorded 404 page, else a plain one."""
        for ex in self.exchanges:
            if ex.status == 404 and not ex.refused and urlsplit(ex.url).netloc.lower() == host:
                return self.payload(ex)
        return PLAIN_404

    def robots_rules(self) -> RobotsRules:
        """robots.txt of every recorded origin, as recorded. An origin whose robots.txt was
        not recorded is answered 404 in replay, and a 404 robots.txt allows everything
        (RFC 9309 §2.3.1.3): the rules the replay serves are the rules the run obeys."""
        if self._robots is not None:
            return self._robots
        rules: dict[str, Protego | None] = {}
        for host in sorted(self.hosts):
            for scheme in ("http", "https"):
                origin = f"{scheme}://{host}"
                ex = next(
                    (
                        e
                        for e in self.exchanges
                        if e.url.startswith(origin + "/robots.txt")
                        and e.status == 200
                        and not e.refused
                    ),
                    None,
                )
                text = self.payload(ex).body.decode("utf-8", "replace") if ex else ""
                rules[origin] = Protego.parse(text)
        self._robots = RobotsRules(rules)
        return self._robots

    def session(self, actor: str = "agent", log: list[dict] | None = None) -> ReplaySession:
        return ReplaySession(self, actor, log)

    def describe(self) -> dict:
        return {
            "recording": str(self.path),
            "sha256": self.sha256,
            "rules": list(self.rules_files),
            "clock": self.clock.isoformat(),
            "exchanges": len(self.exchanges),
            "refused": len(self.refused),
            "warnings": list(self.warnings),
        }


@lru_cache(maxsize=16)
def _open(
    path: str, _mtime: int, rules_files: tuple[str, ...], allow_truncated: bool = False
) -> Recording:
    return Recording(path, rules_files, allow_truncated)


@dataclass
class ReplaySession:
    """One run's view of a recording: its own matcher (repeated requests are served in
    recorded order per run) and its log. The harness's own page loads use a second session
    on the same log (actor "harness"), so a probe never consumes what the agent is served."""

    recording: Recording
    actor: str = "agent"
    log: list[dict] | None = None
    matcher: Matcher = field(init=False)

    def __post_init__(self) -> None:
        self.matcher = Matcher(self.recording.exchanges, self.recording.rules)
        if self.log is None:
            self.log = []
        self._t0 = time.perf_counter()

    async def attach(self, context, clock_at: datetime | None = None) -> None:
        """Answer every request of `context` from the recording, on the recording's clock."""
        await context.clock.install(time=clock_at or self.recording.clock)
        await context.route("**/*", self.answer)

    def _entry(self, request, decision, status: int | None, **extra) -> dict:
        entry = {
            "t": round(time.perf_counter() - self._t0, 3),
            "actor": self.actor,
            "method": request.method,
            "url": request.url,
            "type": request.resource_type,
            "tag": decision.tag,
            "rule": decision.rule,
            "status": status,
            **extra,
        }
        if decision.exchange is not None and decision.exchange.url != request.url:
            entry["recorded_url"] = decision.exchange.url
        self.log.append(entry)
        return entry

    async def answer(self, route) -> None:
        """The route handler: fulfil from the recording, or refuse; never continue to the
        network (non-HTTP URLs such as data: never reach it anyway)."""
        request = route.request
        url = request.url
        if not url.startswith(("http://", "https://")):
            await route.continue_()
            return
        body = request.post_data_buffer or b""
        decision = self.matcher.match(request.method, url, body)
        host = urlsplit(url).netloc.lower()
        if decision.exchange is not None and decision.exchange.refused:
            # Recorded but not servable (over the payload limit, a revisit without its
            # original): a miss that says why, never the inflated or missing bytes.
            decision.tag, decision.rule = "miss", decision.exchange.refused
            decision.exchange = None
            self.matcher.log[-1].update(tag="miss", rule=decision.rule)
        if decision.tag == "blocked":
            self._entry(request, decision, 204)
            await route.fulfill(status=204, body=b"")
            return
        if decision.exchange is None:
            if host not in self.recording.hosts:
                # Not a host of the recording: it does not exist in this world.
                decision.rule = f"host {host} is not in the recording"
                self._entry(request, decision, None)
                await route.abort("namenotresolved")
                return
            payload = self.recording.not_found(host)
            self._entry(request, decision, payload.status)
            await _fulfill(route, payload)
            return
        payload = self.recording.payload(decision.exchange)
        location = _location(payload)
        if location and 300 <= payload.status < 400:
            target = urljoin(decision.exchange.url, location)
            if request.is_navigation_request():
                # A fulfilled 3xx is followed by the browser without asking the route again:
                # the hop would reach the (unresolvable) network. Playwright's own HAR replay
                # redirects navigations this way.
                self._entry(request, decision, payload.status, redirect=target)
                await route._impl_obj._redirect_navigation_request(target)
                return
            payload, hops = self._follow(target)
            self._entry(request, decision, payload.status, redirect=target, hops=hops)
        else:
            self._entry(request, decision, payload.status)
        await _fulfill(route, payload)

    def _follow(self, url: str) -> tuple[Payload, list[str]]:
        """A sub-resource's redirect chain, resolved inside the recording."""
        hops = [url]
        for _ in range(MAX_REDIRECTS):
            decision = self.matcher.match("GET", url)
            if decision.exchange is None or decision.exchange.refused:
                return self.recording.not_found(urlsplit(url).netloc.lower()), hops
            payload = self.recording.payload(decision.exchange)
            location = _location(payload)
            if not (location and 300 <= payload.status < 400):
                return payload, hops
            url = urljoin(decision.exchange.url, location)
            hops.append(url)
        return PLAIN_404, hops

    def coverage(self) -> dict[str, Any]:
        return coverage(self.log)

    def agent_misses(self) -> list[dict]:
        return [e for e in self.log if e["tag"] == "miss" and e.get("actor") != "harness"]


async def _fulfill(route, payload: Payload) -> None:
    headers: dict[str, str] = {}
    for k, v in payload.headers:  # repeated headers (Link, Vary) joined, as HTTP allows
        headers[k] = f"{headers[k]}, {v}" if k in headers else v
    await route.fulfill(status=payload.status, headers=headers, body=payload.body)


def _location(payload: Payload) -> str | None:
    return next((v for k, v in payload.headers if k.lower() == "location"), None)


def recording_path(spec: str, base: str | Path) -> Path:
    """A task's `replay.recording` (or rules file): absolute, or relative to `base`."""
    path = Path(spec)
    return path if path.is_absolute() else Path(base) / path
