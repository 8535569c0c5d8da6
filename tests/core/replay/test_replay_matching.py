"""Replay matching by rules (issue 7): noise parameters, page identity, a re-worded search
and repeated requests are answered and tagged; a state-changing request for a different
item is a miss; analytics are blocked; hand-written rules win over inferred ones."""

from __future__ import annotations

from newsbench_dagster.core.replay.matching import Matcher, Rules, coverage
from newsbench_dagster.core.replay.warc import Exchange, exchanges_from_warc

H = "http://harbor-herald.test"
RECORDED = [
    Exchange("GET", f"{H}/", order=0, response="front"),
    Exchange("GET", f"{H}/news/city/mayor-opens-bridge-123", order=1, response="article"),
    Exchange("GET", f"{H}/search?q=harbor+bridge+vote", order=2, response="search"),
    Exchange("GET", f"{H}/fragments/most-read", order=3, response="most-read 1"),
    Exchange("GET", f"{H}/fragments/most-read", order=4, response="most-read 2"),
    Exchange(
        "POST",
        f"{H}/newsletter",
        body=b"newsletter=morning&email=r%40x.test&csrf=abc",
        order=5,
        response="signed up",
    ),
]


def matcher(*files) -> Matcher:
    return Matcher(RECORDED, Rules.load(*files))


def test_the_same_request_is_exact():
    d = matcher().match("GET", f"{H}/")
    assert (d.tag, d.exchange.response) == ("exact", "front")


def test_changed_noise_parameters_are_fuzzy_with_the_rules_named():
    d = matcher().match("GET", f"{H}/?utm_source=rss&t=1733050000&session_id=zz")
    assert (d.tag, d.exchange.response) == ("fuzzy", "front")
    assert "generic:drop utm_*" in d.rule and "generic:drop t" in d.rule
    assert "generic:drop *session*" in d.rule
    # A parameter that identifies content is kept: another page is a miss.
    assert matcher().match("GET", f"{H}/?page=2").tag == "miss"


def test_url_variants_of_one_article_collapse_to_its_id():
    d = matcher().match("GET", f"{H}/news/city/mayor-opens-new-bridge-123")
    assert (d.tag, d.exchange.response) == ("fuzzy", "article")
    assert "page /news/{1}" in d.rule
    assert matcher().match("GET", f"{H}/news/city/mayor-opens-bridge-124").tag == "miss"


def test_a_reworded_search_matches_by_its_words():
    d = matcher().match("GET", f"{H}/search?q=bridge+vote+harbor+council")
    assert (d.tag, d.exchange.response) == ("search", "search")
    assert "similarity 0.75" in d.rule
    assert matcher().match("GET", f"{H}/search?q=weather+tomorrow").tag == "miss"


def test_repeated_requests_are_served_in_recorded_order():
    m = matcher()
    got = [m.match("GET", f"{H}/fragments/most-read").exchange.response for _ in range(3)]
    assert got == ["most-read 1", "most-read 2", "most-read 2"]


def test_a_state_change_matches_on_the_fields_that_matter_only():
    m = matcher()
    same = m.match("POST", f"{H}/newsletter", b"newsletter=morning&email=r%40x.test&csrf=zzz")
    assert (same.tag, same.exchange.response) == ("fuzzy", "signed up")
    other = m.match("POST", f"{H}/newsletter", b"newsletter=evening&email=r%40x.test&csrf=abc")
    assert other.tag == "miss" and other.exchange is None


def test_analytics_are_blocked_and_the_log_is_a_coverage_report():
    m = matcher()
    assert m.match("GET", f"{H}/t/pixel.gif?r=1").tag == "blocked"
    m.match("GET", f"{H}/nowhere")
    m.match("GET", f"{H}/")
    report = coverage(m.log)
    assert report["counts"] == {"blocked": 1, "miss": 1, "exact": 1}
    assert report["misses"] == [f"{H}/nowhere"]


def test_hand_written_rules_win_over_inferred_ones(tmp_path):
    inferred = tmp_path / "inferred.yaml"
    inferred.write_text(
        "source: inferred\nsites:\n  harbor-herald.test:\n    drop_params: [page]\n"
    )
    assert matcher(inferred).match("GET", f"{H}/?page=2").tag == "fuzzy"  # inferred: noise
    hand = tmp_path / "hand.yaml"
    hand.write_text("sites:\n  harbor-herald.test:\n    keep_params: [page]\n")
    assert matcher(inferred, hand).match("GET", f"{H}/?page=2").tag == "miss"  # hand wins


def test_exchanges_are_read_from_a_recorded_warc(newsroom_server, tmp_path):
    import asyncio

    from newsbench_dagster.core.harness.browser import BrowserOptions
    from newsbench_dagster.core.replay.recorder import record
    from newsbench_dagster.core.web.network import Routing

    path = tmp_path / "h.warc.gz"
    options = BrowserOptions(routing=Routing.via_proxy(newsroom_server.address))
    asyncio.run(record([f"{H}/"], path, options, settle_ms=100))
    recorded = exchanges_from_warc(path)
    m = Matcher(recorded, Rules.load())
    d = m.match("GET", f"{H}/?utm_medium=email")
    assert d.tag == "fuzzy" and isinstance(d.exchange.response, int)  # the record's offset
    assert {e.method for e in recorded} == {"GET"}


def test_rules_are_inferred_from_a_recording_and_the_cli_writes_them(tmp_path):
    from io import BytesIO

    import yaml
    from typer.testing import CliRunner
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from newsbench_dagster.cli import app
    from newsbench_dagster.core.replay.matching import suggest_rules

    path = tmp_path / "loads.warc.gz"
    front, story = b"<html>front</html>", b"<html>story 42</html>"
    pixel = b"GIF89a\x01\x00\x01\x00"
    loads = [
        (f"{H}/?cb=111", front, "text/html"),
        (f"{H}/?cb=222", front, "text/html"),  # another cache-buster, the same bytes
        (f"{H}/?page=2", b"<html>page two</html>", "text/html"),
        (f"{H}/news/city/old-title-42", story, "text/html"),
        (f"{H}/news/city/new-title-42", story, "text/html"),  # one story, two slugs
        (f"{H}/px.gif?r=9", pixel, "image/gif"),
    ]
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True, warc_version="WARC/1.1")
        for url, body, ctype in loads:
            http = StatusAndHeaders("200 OK", [("Content-Type", ctype)], protocol="HTTP/1.1")
            w.write_record(
                w.create_warc_record(
                    url, "response", payload=BytesIO(body), length=len(body), http_headers=http
                )
            )
    rules = suggest_rules(exchanges_from_warc(path))
    site = rules["sites"]["harbor-herald.test"]
    assert site["drop_params"] == ["cb"]  # `page` changed the bytes: it identifies content
    assert site["page_identity"] == [{"pattern": r"^/news/.*?(\d+)$", "key": "/news/{1}"}]
    assert rules["generic"]["block_paths"] == [r"^/px\.gif$"]
    out = tmp_path / "inferred.yaml"
    result = CliRunner().invoke(app, ["replay", "suggest-rules", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(out.read_text())["source"] == "inferred"
    # The inferred file works as rules: the cache-buster no longer splits the front page.
    recorded = exchanges_from_warc(path)
    m = Matcher(recorded, Rules.load(out))
    assert m.match("GET", f"{H}/?cb=999").tag == "fuzzy"
    assert m.match("GET", f"{H}/news/city/third-title-42").exchange.url.endswith("-42")


def test_a_repeated_resource_keeps_recorded_order_with_and_without_noise():
    m = matcher()
    first = m.match("GET", f"{H}/fragments/most-read")
    second = m.match("GET", f"{H}/fragments/most-read?_=1764504000000")
    third = m.match("GET", f"{H}/fragments/most-read")
    assert (first.tag, second.tag, third.tag) == ("exact", "fuzzy", "exact")
    assert [d.exchange.response for d in (first, second, third)] == [
        "most-read 1",
        "most-read 2",
        "most-read 2",  # then the last again
    ]


def test_what_the_recorder_redacts_still_matches_and_content_params_are_kept():
    from newsbench_dagster.core.replay.redact import clean_url

    recorded = [
        Exchange("GET", clean_url(f"{H}/live?token=abc123")[0], order=0, response="live"),
        Exchange("GET", f"{H}/news/city/?author=jane-doe", order=1, response="jane"),
    ]
    assert recorded[0].url.endswith("token=redacted") and recorded[1].url.endswith("jane-doe")
    m = Matcher(recorded, Rules.load())
    # The page asks with its own token: compared as it would have been recorded.
    assert m.match("GET", f"{H}/live?token=zzz999").exchange.response == "live"
    assert m.match("GET", f"{H}/news/city/?author=jane-doe").tag == "exact"
    assert m.match("GET", f"{H}/news/city/?author=john-roe").tag == "miss"


def test_beacon_rules_block_whole_segments_not_article_slugs():
    m = matcher()
    assert m.match("GET", f"{H}/beacon.gif?e=view").tag == "blocked"
    assert m.match("GET", f"{H}/analytics/collect").tag == "blocked"
    slug = m.match("GET", f"{H}/news/city/beacon-hill-residents-protest-123")
    assert slug.tag == "fuzzy" and slug.exchange.response == "article"
