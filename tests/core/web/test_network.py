"""The polite fetcher: robots.txt, the allowlist and per-host spacing, all on the record."""

from __future__ import annotations

import time

from newsbench_dagster.core.scoring.compliance import violations
from newsbench_dagster.core.web.network import Fetcher


def test_robots_disallowed_url_is_refused_and_logged(fetcher):
    res = fetcher.fetch("http://harbor-herald.test/private/archive")
    assert res.status is None and "robots.txt" in res.error
    assert fetcher.fetch("http://harbor-herald.test/").status == 200
    refused = [r for r in fetcher.records if not r.fetched]
    assert [r.url for r in refused] == ["http://harbor-herald.test/private/archive"]
    assert violations(r.as_dict() for r in fetcher.records) == []


def test_off_allowlist_is_refused_without_a_request(fetcher, newsroom):
    before = len(newsroom.requests)
    res = fetcher.fetch("http://evil.example/steal")
    assert "not on the allowlist" in res.error
    assert len(newsroom.requests) == before


def test_no_other_host_resolves_through_the_newsroom(routing):
    # Even a fetcher told to allow a foreign origin cannot reach it: the newsroom answers 502.
    with Fetcher(routing, {"http://example.com"}) as f:
        res = f.fetch("http://example.com/")
    assert res.status is None or res.status >= 400


def test_rate_limit_spaces_requests(routing, registry):
    origin = "http://rheinblatt.test"
    with Fetcher(routing, registry.allowed_origins, min_interval={origin: 0.3}) as f:
        f.robots(origin)
        t0 = time.monotonic()
        f.fetch(origin + "/")
        f.fetch(origin + "/atom.xml")
        assert time.monotonic() - t0 >= 0.55


def test_compliance_flags_requests_that_went_out():
    records = [
        {"url": "http://a.test/", "on_allowlist": True, "robots_allowed": True, "fetched": True},
        {
            "url": "http://x.example/",
            "on_allowlist": False,
            "robots_allowed": True,
            "fetched": False,
        },
        {
            "url": "http://y.example/",
            "on_allowlist": False,
            "robots_allowed": True,
            "fetched": True,
        },
        {
            "url": "http://a.test/private/",
            "on_allowlist": True,
            "robots_allowed": False,
            "fetched": True,
        },
    ]
    assert [v["violation"] for v in violations(records)] == ["off_allowlist", "robots_disallowed"]
