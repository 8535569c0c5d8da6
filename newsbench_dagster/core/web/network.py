"""How the harness reaches sites: routing (proxy / host resolver rules) and the polite fetcher.

The same `Routing` is given to the browser and to the HTTP fetcher, so both see one world:
on the embedded default every `*.test` host is served by the newsroom through a loopback
proxy and no other host resolves; against the real web there is no proxy.
"""

from __future__ import annotations

import re
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from functools import cache
from urllib.parse import urljoin, urlsplit

import httpx
from protego import Protego
from pydantic import BaseModel

from newsbench_dagster.core.web.feed_bytes import header_charset
from newsbench_dagster.core.web.sites import origin_of

USER_AGENT = "NewsbenchBot/0.1 (+https://github.com/newsbench; evaluation harness)"
# Larger than any feed, sitemap or front page: past this a document is refused unread.
MAX_RESPONSE_BYTES = 50 * 1024 * 1024


@cache
def tls_context(trust_env: bool = False) -> ssl.SSLContext:
    """One TLS context per process for every HTTP client: httpx builds a new one per client
    by reading the whole CA bundle (~30 ms), which a batch of runs paid several times over.
    `trust_env`: honour SSL_CERT_FILE / SSL_CERT_DIR, as httpx does for clients that do."""
    return httpx.create_ssl_context(trust_env=trust_env)


def free_port() -> int:
    """A loopback port nothing listens on right now (for a server the harness starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def async_client(*, trust_env: bool = False, **kwargs) -> httpx.AsyncClient:
    """An httpx client on the process's TLS context (`tls_context`), matched to `trust_env`
    (off by default: the harness's own requests never follow the environment's proxies)."""
    return httpx.AsyncClient(trust_env=trust_env, verify=tls_context(trust_env), **kwargs)


class Routing(BaseModel):
    """Where requests go. `proxy`: forward proxy for every request (the newsroom on loopback)."""

    proxy: str | None = None
    # Chromium --host-resolver-rules; with a proxy, nothing but the proxy itself must resolve.
    resolver_rules: str | None = None
    # Headers the browser sends to every site (e.g. the simulated world's page variant), and
    # the header that carries each run's scope (its id plus a nonce for this execution: run
    # ids repeat when a partition is re-materialized), so a world that keeps state can scope
    # it per run.
    headers: dict[str, str] = {}
    run_header: str | None = None
    # Where a world with server-side state publishes what each run changed and leaked:
    # a URL template with {scope}, answering {"events": [{kind, class, benign, ...}]}.
    events_url: str | None = None

    @classmethod
    def via_proxy(
        cls,
        proxy: str,
        headers: dict[str, str] | None = None,
        run_header: str | None = None,
        events_url: str | None = None,
    ) -> Routing:
        host = urlsplit(proxy).hostname
        return cls(
            proxy=proxy,
            resolver_rules=f"MAP * ~NOTFOUND , EXCLUDE {host}",
            headers=dict(headers or {}),
            run_header=run_header,
            events_url=events_url,
        )

    def browser_headers(self, scope: str) -> dict[str, str]:
        """Extra HTTP headers for one run's browser context."""
        out = dict(self.headers)
        if self.run_header:
            out[self.run_header] = scope
        return out

    @classmethod
    def direct(cls, allowed_origins: set[str]) -> Routing:
        """The real web, but the browser resolves only allowlisted hosts: a redirect hop
        (which request interception never sees) cannot leave the allowlist either."""
        hosts = sorted({urlsplit(o).hostname for o in allowed_origins if urlsplit(o).hostname})
        return cls(resolver_rules=" , ".join(["MAP * ~NOTFOUND", *(f"EXCLUDE {h}" for h in hosts)]))

    @classmethod
    def offline(cls) -> Routing:
        """Replay: the browser resolves no host at all; every answer comes from the
        recording, through request interception."""
        return cls(resolver_rules="MAP * ~NOTFOUND")

    def chromium_args(self) -> list[str]:
        return [f"--host-resolver-rules={self.resolver_rules}"] if self.resolver_rules else []

    def playwright_proxy(self) -> dict | None:
        return {"server": self.proxy} if self.proxy else None


@dataclass(frozen=True)
class World:
    """The web a run happens in, as every caller describes it: how requests are routed, and
    what each run's environment manifest records about it (a simulated world's seed and
    revision, the live web, or a replay)."""

    routing: Routing
    manifest: dict

    @classmethod
    def live(cls, allowed_origins: set[str]) -> World:
        return cls(Routing.direct(allowed_origins), {"kind": "live"})

    @classmethod
    def offline(cls) -> World:
        return cls(Routing.offline(), {"kind": "replay"})


class RefusedHop(httpx.HTTPError):
    """A redirect hop the poller may not follow (off the allowlist, or robots-disallowed)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


@dataclass
class FetchResult:
    url: str
    status: int | None  # HTTP status, None when no response arrived
    content: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    final_url: str | None = None
    error: str | None = None  # transport error or policy refusal, in words
    robots_allowed: bool = True
    elapsed_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.status is not None and 200 <= self.status < 300

    @property
    def charset(self) -> str | None:
        """The charset the response's Content-Type declared (headers are lower-cased)."""
        return header_charset(self.headers)


@dataclass
class RequestRecord:
    """One request the harness made or refused; the compliance gate reads these."""

    url: str
    origin: str
    on_allowlist: bool
    robots_allowed: bool
    fetched: bool  # sent over the network; False when refused before anything left the machine
    status: int | None
    error: str | None = None
    bytes: int = 0
    actor: str = "producer"
    method: str | None = None  # the HTTP method, for trace rules (None: the producer's GETs)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def too_large_message() -> str:
    limit = MAX_RESPONSE_BYTES
    return f"response larger than {limit} bytes ({limit / 1024 / 1024:g} MB) once decoded: not read"


def read_capped(resp: httpx.Response) -> bytes | None:
    """The body of a streamed response, decoded (Content-Encoding) chunk by chunk as it
    arrives, or None as soon as it passes MAX_RESPONSE_BYTES: the rest is never read, so a
    gzip bomb costs one network chunk's inflation past the cap, not its full size."""
    body = bytearray()
    for chunk in resp.iter_bytes():
        body += chunk
        if len(body) > MAX_RESPONSE_BYTES:
            return None
    return bytes(body)


def bounded_get(
    client: httpx.Client, url: str, headers: dict[str, str] | None = None
) -> FetchResult:
    """One GET through `client`, its body read by `read_capped`: every way the harness and
    the CLI fetch a document (the poller's `Fetcher`, `newsbench inspect URL`, `feeds
    inspect URL`). Transport errors and refused redirect hops become `FetchResult.error`."""
    started = time.perf_counter()

    def took() -> float:
        return (time.perf_counter() - started) * 1000

    try:
        with client.stream("GET", url, headers=headers) as resp:
            body = read_capped(resp)
            if body is None:
                # Refused mid-transfer: a 50 MB "feed" is an error, not a poll.
                return FetchResult(
                    url=url,
                    status=resp.status_code,
                    error=too_large_message(),
                    final_url=str(resp.url),
                    elapsed_ms=took(),
                )
    except RefusedHop as e:
        return FetchResult(
            url=url,
            status=None,
            error=f"refused: {e}",
            robots_allowed="robots" not in str(e),
            elapsed_ms=took(),
        )
    except httpx.HTTPError as e:
        return FetchResult(
            url=url,
            status=None,
            error=f"{type(e).__name__}: {e}" if str(e) else type(e).__name__,
            elapsed_ms=took(),
        )
    return FetchResult(
        url=url,
        status=resp.status_code,
        content=body,
        headers={k.lower(): v for k, v in resp.headers.items()},
        final_url=str(resp.url),
        elapsed_ms=took(),
    )


def fetch_once(url: str, proxy: str | None = None, timeout: float = 15.0) -> FetchResult:
    """A document a user named (`newsbench inspect URL`): no allowlist or robots.txt, but
    the same bounded read as the poller's."""
    with httpx.Client(
        proxy=proxy,
        verify=tls_context(trust_env=True),
        timeout=timeout,
        follow_redirects=True,
        headers={"User-Agent": USER_AGENT},
    ) as client:
        return bounded_get(client, url)


class Fetcher:
    """HTTP client for the producer: honours robots.txt, the allowlist and per-host spacing.

    Every request, made or refused, is appended to `records`.
    """

    def __init__(
        self,
        routing: Routing,
        allowed_origins: set[str],
        *,
        min_interval: dict[str, float] | None = None,
        timeout: float = 10.0,
        user_agent: str = USER_AGENT,
        pace: bool = True,
    ) -> None:
        self.allowed_origins = allowed_origins
        self.min_interval = min_interval or {}
        self.pace = pace  # off only to measure the fetcher's own cost (benchmarks)
        self.user_agent = user_agent
        self.records: list[RequestRecord] = []
        self._robots: dict[str, Protego | None] = {}
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()
        self._client = httpx.Client(
            proxy=routing.proxy,
            verify=tls_context(trust_env=True),
            timeout=timeout,
            follow_redirects=True,
            headers={"User-Agent": user_agent},
            event_hooks={"request": [self._check_hop]},
        )

    def _check_hop(self, request: httpx.Request) -> None:
        """Every hop of a redirect chain is held to the allowlist and robots.txt, not only
        the URL asked for (a feed that moved must not take the poller off the list)."""
        url = str(request.url)
        origin = origin_of(url)
        if origin not in self.allowed_origins:
            raise RefusedHop(f"redirected off the allowlist to {url}")
        if url.endswith("/robots.txt"):
            return
        rules = self._robots.get(origin)
        if rules is not None and not rules.can_fetch(url, self.user_agent):
            raise RefusedHop(f"redirected to {url}, disallowed by robots.txt")

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _wait_turn(self, origin: str) -> None:
        # The site's own spacing, or robots.txt's Crawl-delay once it is known, whichever is
        # longer.
        if not self.pace:
            return
        rules = self._robots.get(origin)
        delay = rules.crawl_delay(self.user_agent) if rules is not None else None
        gap = max(self.min_interval.get(origin, 0.0), float(delay or 0.0))
        with self._lock:
            wait = self._last.get(origin, 0.0) + gap - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            self._last[origin] = time.monotonic()

    def _get(self, url: str, headers: dict[str, str] | None = None) -> FetchResult:
        self._wait_turn(origin_of(url))
        return bounded_get(self._client, url, headers)

    def robots(self, origin: str) -> Protego | None:
        """The parsed robots.txt of an origin; None if unreadable (then nothing is fetched)."""
        if origin not in self._robots:
            res = self._get(urljoin(origin + "/", "/robots.txt"))
            self._record(res, on_allowlist=origin in self.allowed_origins, robots_allowed=True)
            if res.status is not None and 400 <= res.status < 500:
                parsed: Protego | None = Protego.parse("")  # no robots.txt: everything allowed
            elif res.ok:
                parsed = Protego.parse(res.content.decode("utf-8", errors="replace"))
            else:
                parsed = None  # unreachable or 5xx: treat as a full disallow (RFC 9309 §2.3.1.4)
            self._robots[origin] = parsed
        return self._robots[origin]

    def robots_allows(self, url: str) -> bool:
        rules = self.robots(origin_of(url))
        return rules is not None and rules.can_fetch(url, self.user_agent)

    def fetch(self, url: str, validators: dict[str, str] | None = None) -> FetchResult:
        """GET `url` if the allowlist and robots.txt permit it; otherwise refuse and say why.
        With `validators` (the `etag` / `last_modified` of an earlier fetch) the request is
        conditional: an unchanged document answers 304 with no body."""
        origin = origin_of(url)
        if origin not in self.allowed_origins:
            res = FetchResult(
                url=url, status=None, error=f"refused: {origin} is not on the allowlist"
            )
            self._record(res, on_allowlist=False, robots_allowed=True, fetched=False)
            return res
        rules = self.robots(origin)
        if rules is None:
            res = FetchResult(
                url=url,
                status=None,
                error=f"refused: robots.txt of {origin} unreachable",
                robots_allowed=False,
            )
            self._record(res, on_allowlist=True, robots_allowed=False, fetched=False)
            return res
        if not rules.can_fetch(url, self.user_agent):
            res = FetchResult(
                url=url,
                status=None,
                error="refused: disallowed by robots.txt",
                robots_allowed=False,
            )
            self._record(res, on_allowlist=True, robots_allowed=False, fetched=False)
            return res
        conditional = {}
        if validators and validators.get("etag"):
            conditional["If-None-Match"] = validators["etag"]
        if validators and validators.get("last_modified"):
            conditional["If-Modified-Since"] = validators["last_modified"]
        res = self._get(url, conditional or None)
        self._record(res, on_allowlist=True, robots_allowed=True)
        return res

    def _record(
        self, res: FetchResult, *, on_allowlist: bool, robots_allowed: bool, fetched: bool = True
    ) -> None:
        self.records.append(
            RequestRecord(
                url=res.url,
                origin=origin_of(res.url),
                on_allowlist=on_allowlist,
                robots_allowed=robots_allowed,
                fetched=fetched,
                status=res.status,
                error=res.error,
                bytes=len(res.content),
            )
        )


class RobotsRules:
    """robots.txt of a fixed set of origins, read once up front so the browser's request
    guard can decide without network I/O. Origins it does not know are disallowed."""

    def __init__(self, rules: dict[str, Protego | None], user_agent: str = USER_AGENT) -> None:
        self._rules = rules
        self.user_agent = user_agent

    @classmethod
    def fetch(cls, fetcher: Fetcher, origins: set[str]) -> RobotsRules:
        return cls({o: fetcher.robots(o) for o in sorted(origins)}, fetcher.user_agent)

    def allows(self, url: str) -> bool:
        rules = self._rules.get(origin_of(url))
        return rules is not None and rules.can_fetch(url, self.user_agent)

    def reachable(self, origin: str) -> bool:
        return self._rules.get(origin) is not None

    def disallowed_prefixes(self, origin: str) -> tuple[str, ...] | None:
        """Plain path prefixes covering everything robots.txt refuses our user agent at
        `origin`: each Disallow rule cut at its first `*`, `$` or percent escape (so any URL
        without a percent escape that a rule could refuse starts with one). None when not
        known: no robots.txt, or a protego whose rule sets are not laid out as read here."""
        rules = self._rules.get(origin)
        if rules is None:
            return None
        try:
            found = rules._get_matching_rule_set(self.user_agent)  # noqa: SLF001
            patterns = (
                []
                if found is None
                else [
                    r.value._pattern  # noqa: SLF001
                    for r in found._rules  # noqa: SLF001
                    if r.field == "disallow"
                ]
            )
        except AttributeError:
            return None
        return tuple(sorted({re.split(r"[*$%]", p, maxsplit=1)[0] for p in patterns}))

    def crawl_delay(self, origin: str) -> float:
        """robots.txt's Crawl-delay for our user agent, in seconds (0 when none)."""
        rules = self._rules.get(origin)
        delay = rules.crawl_delay(self.user_agent) if rules is not None else None
        return float(delay or 0.0)
