"""One HTTP exchange as the newsroom sees it: a parsed request and the response to send.

Kept free of sockets so content and state code are plain functions that tests call directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs, urlencode

# Who is asking. A harness scopes a run by sending this header; a plain browser gets a session
# cookie instead, so two runs never see each other's signups, settings or meters.
RUN_HEADER = "x-newsroom-run"
SESSION_COOKIE = "nr_sid"
# Where the reader is (loopback has no geography): "eu" sees the consent modal.
GEO_HEADER = "x-newsroom-geo"
# Which seeded page variant to serve (see form_variant.py); recorded in the run's log.
VARIANT_HEADER = "x-newsroom-variant"
MAX_BODY = 64 * 1024


def parse_query(text: str) -> dict[str, list[str]]:
    # keep_blank_values: a form field left empty is still a field that was sent.
    return parse_qs(text, keep_blank_values=True, max_num_fields=200)


def parse_cookies(header: str) -> dict[str, str]:
    jar = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:
        return {}  # a garbled Cookie header is the client's problem; treat as none
    return {k: m.value for k, m in jar.items()}


@dataclass(frozen=True)
class Request:
    method: str = "GET"
    path: str = "/"
    query: Mapping[str, list[str]] = field(default_factory=dict)
    form: Mapping[str, list[str]] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)  # names lower-cased
    cookies: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""

    @classmethod
    def build(
        cls,
        target: str,
        method: str = "GET",
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
    ) -> Request:
        """Parse a request target ('/path?q=1#frag') plus headers and an urlencoded body."""
        path, _, query = target.partition("?")
        path = path.split("#", 1)[0] or "/"
        query = query.split("#", 1)[0]
        hdrs = {k.lower(): v for k, v in (headers or {}).items()}
        form: dict[str, list[str]] = {}
        ctype = hdrs.get("content-type", "")
        if body and (not ctype or ctype.startswith("application/x-www-form-urlencoded")):
            try:
                form = parse_query(body.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                form = {}
        try:
            parsed_query = parse_query(query)
        except ValueError:  # too many fields
            parsed_query = {}
        return cls(
            method=method.upper(),
            path=path,
            query=parsed_query,
            form=form,
            headers=hdrs,
            cookies=parse_cookies(hdrs.get("cookie", "")),
            body=body,
        )

    def arg(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name)
        return values[0] if values else default

    def field(self, name: str, default: str | None = None) -> str | None:
        values = self.form.get(name)
        return values[0] if values else default

    def fields(self, name: str) -> list[str]:
        return list(self.form.get(name, []))

    @property
    def target(self) -> str:
        return self.path + (f"?{self._query_text()}" if self.query else "")

    def _query_text(self) -> str:
        return urlencode([(k, v) for k, vs in self.query.items() for v in vs])

    @property
    def scope(self) -> str:
        """The run this request belongs to: harness header, else session cookie, else 'anon'."""
        run = self.headers.get(RUN_HEADER, "").strip()
        if run:
            return f"run:{run[:120]}"
        sid = self.cookies.get(SESSION_COOKIE, "").strip()
        return f"sid:{sid[:64]}" if sid else "anon"

    @property
    def has_session(self) -> bool:
        return bool(self.headers.get(RUN_HEADER) or self.cookies.get(SESSION_COOKIE))

    def geo(self, default: str) -> str:
        return (self.headers.get(GEO_HEADER) or default).strip().lower()

    @property
    def variant(self) -> int | None:
        raw = self.headers.get(VARIANT_HEADER) or self.arg("nr_variant")
        try:
            return int(raw) if raw is not None else None
        except ValueError:
            return None


@dataclass(frozen=True)
class Response:
    status: int
    content_type: str
    body: bytes
    last_modified: datetime | None = None
    location: str | None = None  # for redirects
    headers: tuple[tuple[str, str], ...] = ()  # extra headers, e.g. Set-Cookie
    delay: float = 0.0  # seconds the server waits before answering (slow routes)
