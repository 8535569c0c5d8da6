"""The newsroom over HTTP on loopback.

One listening socket serves every site. Clients either use it as a forward proxy (requests arrive
in absolute form, `GET http://harbor-herald.test/ HTTP/1.1`) or talk to it directly with a Host
header; either way the hostname picks the site. Only 127.0.0.1/localhost reach the control
endpoint, so site hosts never expose anything a real news site would not.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import socketserver
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from . import routes
from .clock import FixedClock, as_utc, utc_now
from .exchange import MAX_BODY, Request
from .state import NewsroomState
from .templating import TEXT
from .world import Newsroom

CONTROL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
CONTROL_PREFIX = "/__newsroom"
HEALTH_PATH = f"{CONTROL_PREFIX}/health"
FAULT_KINDS = frozenset({"down", "feed_malformed", "feed_empty", "slow"})
SLOW_DELAY_SECONDS = 2.0
REQUEST_LOG_SIZE = 1000

Clock = Callable[[], datetime]


def _not_modified(request_headers, etag: str, last_modified: datetime | None) -> bool:
    """RFC 9110 §13.1: If-None-Match wins over If-Modified-Since."""
    if (match := request_headers.get("If-None-Match")) is not None:
        return etag in [m.strip() for m in match.split(",")] or match.strip() == "*"
    since = request_headers.get("If-Modified-Since")
    if since and last_modified is not None:
        try:
            return as_utc(last_modified).replace(microsecond=0) <= parsedate_to_datetime(since)
        except (TypeError, ValueError):
            return False
    return False


def http_date(at: datetime) -> str:
    return format_datetime(as_utc(at), usegmt=True)


class Faults:
    """Test-only fault injection, one fault kind per site (set() replaces the previous one)."""

    def __init__(self, site_keys: Iterable[str]) -> None:
        self._site_keys = frozenset(site_keys)
        self._active: dict[str, str] = {}
        self._lock = threading.Lock()

    def set(self, site_key: str, kind: str) -> None:
        if site_key not in self._site_keys:
            raise KeyError(f"unknown site {site_key!r}")
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r}; expected one of {sorted(FAULT_KINDS)}")
        with self._lock:
            self._active[site_key] = kind

    def clear(self, site_key: str | None = None) -> None:
        """Clear one site's fault, or all of them."""
        with self._lock:
            if site_key is None:
                self._active.clear()
            else:
                self._active.pop(site_key, None)

    def get(self, site_key: str) -> str | None:
        with self._lock:
            return self._active.get(site_key)

    def active(self) -> dict[str, str]:
        with self._lock:
            return dict(self._active)


def _truncate_xml(body: bytes) -> bytes:
    """Cut a document part-way, on a character boundary: the root element is never closed."""
    text = body.decode("utf-8")
    return text[: len(text) * 3 // 5].encode("utf-8")


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], owner: NewsroomServer) -> None:
        self.owner = owner
        # Open connections, so stop() can end keep-alive connections instead of leaking them.
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls getfqdn(), a reverse DNS lookup that can stall for seconds.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):  # already closed by the client
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up (or a fault closing on them) is normal here; stay quiet about it.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"  # keep-alive, as browsers expect from a proxy
    server_version = "newsroom"
    timeout = 60  # idle keep-alive connections end eventually
    # Headers and body go out in two writes; with Nagle on, the body waits for the client's
    # delayed ACK and every response costs ~40 ms on loopback.
    disable_nagle_algorithm = True

    _now: datetime | None = None

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: tests read server.requests instead

    def date_time_string(self, timestamp: float | None = None) -> str:
        # The Date header follows the newsroom clock, so it agrees with the page content.
        if timestamp is None and self._now is not None:
            return http_date(self._now)
        return super().date_time_string(timestamp)

    # -- request target --------------------------------------------------------------------------

    def _target(self) -> tuple[str, str]:
        """(hostname, path-with-query) from an absolute-form target or the Host header."""
        if self.command == "CONNECT":  # authority form: "host:port"
            return urlsplit(f"//{self.path}").hostname or "", self.path
        if not self.path.startswith("/") and "://" in self.path:  # absolute form (proxy)
            parts = urlsplit(self.path)
            path = parts.path or "/"
            if parts.query:
                path += "?" + parts.query
            return (parts.hostname or "").lower(), path
        host = self.headers.get("Host", "")
        return (urlsplit(f"//{host.strip()}").hostname or "").lower(), self.path

    # -- methods ---------------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._handle(head=False)

    def do_HEAD(self) -> None:
        self._handle(head=True)

    def do_POST(self) -> None:
        self._handle(head=False)

    # Other methods reach the site, which answers 405 like a real one would (not 501).
    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_POST

    def do_CONNECT(self) -> None:
        # No TLS interception: the simulated web is plain HTTP only. A tunnel to anywhere
        # is still a navigation attempt, and off the allowlist it is a sink.
        self._now = now = as_utc(self.server.owner.clock())
        host, path = self._target()
        owner = self.server.owner
        site = owner.newsroom.site_for_host(host)
        request = Request.build("/", "CONNECT", dict(self.headers.items()))
        owner.state.inspect(request, host, site.key if site else None, now)
        self._not_allowed()

    def _not_allowed(self) -> None:
        self._now = as_utc(self.server.owner.clock())
        host, path = self._target()
        self.close_connection = True  # any request body stays unread
        self._reply(
            host,
            path,
            405,
            TEXT,
            b"newsroom: method not allowed\n",
            head=False,
            headers={"Allow": "GET, HEAD, POST"},
        )

    def _read_body(self) -> bytes | None:
        """The request body, or None (after answering) when it is too large or unreadable."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            self.close_connection = True
            host, path = self._target()
            self._reply(host, path, 413, TEXT, b"newsroom: body too large\n", False)
            return None
        return self.rfile.read(length) if length else b""

    def _handle(self, head: bool) -> None:
        owner = self.server.owner
        self._now = now = as_utc(owner.clock())
        host, path = self._target()
        body = b""
        if self.command not in ("GET", "HEAD"):
            read = self._read_body()
            if read is None:
                return
            body = read
        if not host:
            self._reply(host, path, 400, TEXT, b"newsroom: no host\n", head)
            return
        if host in CONTROL_HOSTS:
            self._control(host, path, head, body)
            return
        request = Request.build(path, self.command, dict(self.headers.items()), body)
        site = owner.newsroom.site_for_host(host)
        owner.state.inspect(request, host, site.key if site else None, now)
        if site is None:
            body = f"newsroom: unknown host {host}\n".encode()
            self._reply(host, path, 502, TEXT, body, head)
            return

        fault = owner.faults.get(site.key)
        if fault == "down":
            # Hang up without a response, like a dead upstream.
            owner.log(self.command, host, path, None, now)
            self.close_connection = True
            return
        if fault == "slow":
            time.sleep(SLOW_DELAY_SECONDS)

        try:
            response = routes.respond(site, request, now, owner.state)
        except Exception:
            # A bug in content code: answer 500, then re-raise so handle_error prints the
            # traceback and drops this connection; the server keeps serving.
            self.close_connection = True
            self._reply(host, path, 500, TEXT, b"newsroom: internal error\n", head)
            raise
        if request.path == site.spec.feed_path and response.status == 200:
            if fault == "feed_malformed":
                response = replace(response, body=_truncate_xml(response.body))
            elif fault == "feed_empty":
                response = replace(response, body=b"")
        if response.delay:
            time.sleep(response.delay)
        headers: list[tuple[str, str]] = []
        if response.last_modified is not None:
            headers.append(("Last-Modified", http_date(response.last_modified)))
        if response.status == 200 and self.command in ("GET", "HEAD"):
            # Conditional GET, as publishers' CDNs answer it: a poll that finds nothing new
            # gets a 304 and no body.
            etag = '"' + hashlib.sha1(response.body).hexdigest()[:20] + '"'
            headers.append(("ETag", etag))
            if _not_modified(self.headers, etag, response.last_modified):
                self._reply(host, path, 304, response.content_type, b"", True, headers)
                return
        if response.location is not None:
            headers.append(("Location", response.location))
        headers.extend(response.headers)
        self._reply(
            host, path, response.status, response.content_type, response.body, head, headers
        )

    def _control(self, host: str, path: str, head: bool, body: bytes = b"") -> None:
        owner = self.server.owner
        request = Request.build(path, self.command, dict(self.headers.items()), body)
        status, doc = control(owner, request)
        data = json.dumps(doc, ensure_ascii=False, default=str).encode("utf-8")
        self._reply(host, path, status, "application/json; charset=utf-8", data, head)

    def _reply(
        self,
        host: str,
        path: str,
        status: int,
        content_type: str,
        body: bytes,
        head: bool,
        headers: dict[str, str] | list[tuple[str, str]] | None = None,
    ) -> None:
        # Logged before the bytes go out: a client that has its response can read the log.
        self.server.owner.log(self.command, host, path, status, self._now)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache")
        pairs = headers.items() if isinstance(headers, dict) else headers or []
        for name, value in pairs:
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if not head:
            self.wfile.write(body)


class NewsroomServer:
    """Serves a Newsroom on loopback in a background thread.

    with NewsroomServer(Newsroom(seed=7), clock=FixedClock(at)) as server:
        httpx.get("http://harbor-herald.test/", proxy=server.address)
    """

    def __init__(
        self,
        newsroom: Newsroom,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Clock | None = None,
        expose_truth: bool = False,
    ) -> None:
        self.newsroom = newsroom
        # Ground truth over HTTP is for tests and benchmarks only; checkers never see it.
        self.expose_truth = expose_truth
        self.state = NewsroomState(newsroom.seed, (spec.key for spec in newsroom.sites))
        self.host = host
        self._port = port
        self.clock: Clock = clock or utc_now
        self.faults = Faults(spec.key for spec in newsroom.sites)
        # Each entry: ts (real time), at (newsroom clock), method, host, path, status
        # (status None: the connection was dropped by the "down" fault).
        self.requests: deque[dict[str, Any]] = deque(maxlen=REQUEST_LOG_SIZE)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"NewsroomServer({self.address}, seed={self.newsroom.seed})"

    @property
    def port(self) -> int:
        return self._port

    @property
    def address(self) -> str:
        return f"http://{self.host}:{self._port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def now(self) -> datetime:
        return as_utc(self.clock())

    def log(
        self, method: str, host: str, path: str, status: int | None, at: datetime | None
    ) -> None:
        entry = {
            "ts": datetime.now(UTC),
            "at": at,
            "method": method,
            "host": host,
            "path": path,
            "status": status,
        }
        self.requests.append(entry)

    def start(self) -> NewsroomServer:
        if self._httpd is not None:
            return self
        self._httpd = _HTTPServer((self.host, self._port), self)
        self._port = self._httpd.server_port
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"newsroom-{self._port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> NewsroomServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def control(owner: NewsroomServer, request: Request) -> tuple[int, Any]:
    """The loopback-only control API: health, per-run event log and reset, test-only truth.

    GET  /__newsroom/health
    GET  /__newsroom/events?scope=run:ID[&kind=K]   the append-only log (all scopes if none)
    POST /__newsroom/reset?scope=run:ID              restore that scope's state
    GET  /__newsroom/truth?site=KEY[&at=ISO]         only with expose_truth=True
    """
    newsroom = owner.newsroom
    path = request.path
    if path == HEALTH_PATH:
        return 200, {
            "newsroom": True,
            "seed": newsroom.seed,
            "revision": newsroom.revision,
            "sites": {spec.key: spec.host for spec in newsroom.sites},
            "truth": owner.expose_truth,
            # Where a frozen clock stands (None: real time): the world a run saw.
            "frozen_at": owner.now().isoformat() if isinstance(owner.clock, FixedClock) else None,
        }
    if path == f"{CONTROL_PREFIX}/events" and request.method in ("GET", "HEAD"):
        events = owner.state.events(request.arg("scope"), request.arg("kind"), request.arg("site"))
        return 200, {"events": [e.as_dict() for e in events]}
    if path == f"{CONTROL_PREFIX}/reset":
        scope = request.arg("scope")
        if request.method != "POST" or not scope:
            return 400, {"error": "POST /__newsroom/reset?scope=SCOPE"}
        return 200, {"reset": owner.state.reset(scope, owner.now()).as_dict()}
    if path == f"{CONTROL_PREFIX}/truth":
        if not owner.expose_truth:
            return 404, {"error": "truth is off; start the server with expose_truth=True"}
        key = request.arg("site") or ""
        if key not in {spec.key for spec in newsroom.sites}:
            return 400, {"error": f"unknown site {key!r}"}
        raw_at = request.arg("at")
        try:
            at = as_utc(datetime.fromisoformat(raw_at)) if raw_at else owner.now()
        except ValueError:
            return 400, {"error": f"bad instant {raw_at!r}; expected ISO 8601"}
        return 200, newsroom.truth(key, at).as_dict()
    return 404, {"error": f"no control endpoint {path}"}
