"""Fuzzing the replay matcher: whatever a page asks for during replay (any method, URL and
body: arbitrary text, URLs built from noisy parts, the recorded URLs mutated), `Matcher.match`
answers a `Decision` tagged exact, fuzzy, search, blocked or miss, with a recorded exchange
exactly when it answers, and never raises. The index is the real recording of
`recordings/` plus the matching tests' own small set (a search, a form POST)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from newsbench_dagster.core.replay.matching import Decision, Matcher, Rules
from newsbench_dagster.core.replay.warc import Exchange, exchanges_from_warc
from newsbench_dagster.paths import PROJECT_ROOT

H = "http://harbor-herald.test"
RECORDED = [
    *exchanges_from_warc(PROJECT_ROOT / "recordings" / "harbor-2026-12-01.warc.gz"),
    Exchange("GET", f"{H}/search?q=harbor+bridge+vote", order=100, response="search"),
    Exchange(
        "POST",
        f"{H}/newsletter",
        body=b"newsletter=morning&email=r%40x.test&csrf=abc",
        order=101,
        response="signed up",
    ),
]
RULES = Rules.load()
ANSWERED = {"exact", "fuzzy", "search"}
METHODS = st.sampled_from(["GET", "POST", "HEAD", "get", "PUT", "OPTIONS"]) | st.text(max_size=8)
HOSTS = [
    "harbor-herald.test",
    "HARBOR-HERALD.TEST",
    "harbor-herald.test:80",
    "user:pw@harbor-herald.test",
    "evil.test",
    "[::1]",
    "xn--bcher-kva.test",
    "bücher.test",
    "",
]
SEGMENTS = ["news", "city", "search", "newsletter", "t", "beacon", "analytics", "collect"]
SEGMENTS += ["fragments", "most-read", "slug-with-id-12345", "..", ".", "%2F", "%ZZ", "é", ""]
PARAMS = ["q", "utm_source", "session_id", "t", "id", "page", "email", "token", "password"]


@st.composite
def urls(draw) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "ftp", "javascript", "data", ""]))
    host = draw(st.sampled_from(HOSTS) | st.text(max_size=12))
    path = "/".join(draw(st.lists(st.sampled_from(SEGMENTS) | st.text(max_size=8), max_size=5)))
    query = "&".join(
        f"{draw(st.sampled_from(PARAMS) | st.text(max_size=6))}={draw(st.text(max_size=12))}"
        for _ in range(draw(st.integers(0, 4)))
    )
    url = f"{scheme}://{host}/{path}" if scheme else f"//{host}/{path}"
    if query or draw(st.booleans()):
        url += "?" + query
    if draw(st.booleans()):
        url += "#" + draw(st.text(max_size=6))
    return url


@st.composite
def mutated_recorded(draw) -> str:
    url = list(draw(st.sampled_from([e.url for e in RECORDED])))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(url)))
        url[at:at] = draw(st.sampled_from(["?", "&", "=", "#", "%", "@", ":", "/", " ", "é"]))
    return "".join(url)


BODIES = st.binary(max_size=200) | st.sampled_from(
    [
        b"newsletter=morning&email=r%40x.test",
        b"newsletter=&email=",
        b"email=%FF%FE&newsletter=\xff",
        b"password=hunter2&token=abc",
        b'{"email": "r@x.test"}',
    ]
)


def check_decision(d: Decision) -> None:
    assert isinstance(d, Decision)
    assert d.tag in ANSWERED | {"blocked", "miss"}
    assert isinstance(d.rule, str) and d.rule
    assert (d.exchange is not None) == (d.tag in ANSWERED)


@given(method=METHODS, url=st.text(max_size=120), body=BODIES)
def test_any_text_as_a_url_is_answered_or_missed(method, url, body):
    check_decision(Matcher(RECORDED, RULES).match(method, url, body))


@given(method=METHODS, url=urls() | mutated_recorded(), body=BODIES)
def test_noisy_urls_are_answered_or_missed(method, url, body):
    matcher = Matcher(RECORDED, RULES)
    for _ in range(2):  # a repeated request too
        check_decision(matcher.match(method, url, body))
    assert len(matcher.log) == 2 and all(e["url"] == url for e in matcher.log)


def test_every_recorded_request_is_answered_by_its_own_response():
    matcher = Matcher(RECORDED, RULES)
    for ex in RECORDED:
        d = matcher.match(ex.method, ex.url, ex.body)
        assert d.tag in ANSWERED | {"blocked"}, (ex.url, d)


@pytest.mark.parametrize(
    "url", ["http://[harbor-herald.test/robots.txt", "http://[::1/x", "http://]/"]
)
def test_an_unbalanced_bracket_in_the_host_is_a_miss(url):
    check_decision(Matcher(RECORDED, RULES).match("GET", url, b""))
