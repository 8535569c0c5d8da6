"""Other tools' archives (issue 21, defect 10): revisit records resolved to their originals
(same-URL and URL-agnostic, by digest or by record id), a revisit without its original a
named miss and an audit finding, a revisit-only WARC refused saying so; the bot-check audit
fires on a visible challenge page and not on an article carrying a hidden widget."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from newsbench_dagster.cli import app
from newsbench_dagster.core.replay.audit import audit
from newsbench_dagster.core.replay.matching import Matcher, Rules
from newsbench_dagster.core.replay.replayer import Recording, RecordingError
from newsbench_dagster.paths import SUITES_DIR
from tests.core.replay.test_replay_runs import _in_replay
from tests.support.net import free_port
from tests.support.warcs import page, write_warc

H = "http://harbor-herald.test"
SUITE = SUITES_DIR / "regression" / "harbor-replayed.yaml"
STORY = b"<html><head><title>Bridge</title></head><body><h1>Bridge opens</h1></body></html>"
HTML = [("Content-Type", "text/html")]


def _deduplicated(tmp_path):
    """A crawl that saw the story at four URLs and stored it once: revisits at the same URL
    (Refers-To-Target-URI equal, and absent), at another URL (URL-agnostic), by record id
    only; and one revisit whose original is in another file."""
    write_warc(tmp_path / "first.warc.gz", [page(f"{H}/news/bridge", STORY)])
    rid, digest = write_warc.ids[f"{H}/news/bridge"]
    revisited = [("X-Crawl", "second visit"), *HTML]
    return write_warc(
        tmp_path / "crawl.warc.gz",
        [
            page(f"{H}/news/bridge", STORY),
            {"revisit": f"{H}/news/bridge", "refers_to_uri": f"{H}/news/bridge",
             "digest": digest, "headers": revisited},
            {"revisit": f"{H}/news/bridge", "digest": digest, "headers": HTML},
            {"revisit": f"{H}/amp/bridge", "refers_to_uri": f"{H}/news/bridge",
             "digest": digest, "headers": HTML},
            {"revisit": f"{H}/print/bridge", "refers_to": f"@{H}/news/bridge",
             "digest": "sha1:NOTTHEDIGESTOFANYTHING", "headers": HTML},
            {"revisit": f"{H}/gone", "refers_to_uri": f"{H}/elsewhere",
             "digest": "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "headers": HTML},
        ],
    ), rid  # fmt: skip


def test_revisits_are_served_with_their_originals_payload(tmp_path):
    path, _ = _deduplicated(tmp_path)
    recording = Recording(path)
    m = Matcher(recording.exchanges, Rules.load())
    served = []
    for url in [f"{H}/news/bridge"] * 3 + [f"{H}/amp/bridge", f"{H}/print/bridge"]:
        d = m.match("GET", url)
        assert d.tag == "exact" and d.exchange is not None, (url, d)
        payload = recording.payload(d.exchange)
        served.append((payload.status, payload.body, dict(payload.headers).get("X-Crawl")))
    assert [body for _, body, _ in served] == [STORY] * 5
    assert {status for status, _, _ in served} == {200}
    # The second visit is served with its own headers and the original's bytes.
    assert [x for _, _, x in served][:2] == [None, "second visit"]


def test_a_revisit_without_its_original_is_a_named_miss_and_an_audit_finding(tmp_path):
    path, _ = _deduplicated(tmp_path)
    [finding] = [f for f in audit(path) if f.url == f"{H}/gone"]
    assert finding.kind == "unresolved_revisit" and f"{H}/elsewhere" in finding.detail
    result = CliRunner().invoke(app, ["recording", "audit", str(path)])
    assert result.exit_code == 1 and "unresolved_revisit" in result.stdout

    async def steps(page_):
        amp = await page_.goto(f"{H}/amp/bridge")
        heading = await page_.locator("h1").inner_text()
        gone = await page_.goto(f"{H}/gone")
        return amp.status, heading, gone.status

    (amp, heading, gone), log = _in_replay(Recording(path), steps)
    assert (amp, heading, gone) == (200, "Bridge opens", 404)
    [miss] = [e for e in log if e["url"] == f"{H}/gone"]
    assert (
        miss["tag"] == "miss"
        and "revisit" in miss["rule"]
        and "not in the recording" in (miss["rule"])
    )


def test_a_revisit_only_warc_is_refused_saying_so(tmp_path):
    _, rid = _deduplicated(tmp_path)  # the original's id, in another file
    only = write_warc(
        tmp_path / "only.warc.gz",
        [
            {"revisit": f"{H}/news/bridge", "refers_to_uri": f"{H}/news/bridge",
             "refers_to": rid, "digest": "sha1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
             "headers": HTML},
        ],
    )  # fmt: skip
    with pytest.raises(RecordingError, match="only revisit records"):
        Recording(only)
    result = CliRunner().invoke(
        app, ["replay", "run", str(SUITE), "--recording", str(only), "--artifacts", str(tmp_path)]
    )
    assert result.exit_code == 2, result.output
    assert "only revisit records" in result.output and str(only) in result.output


# -- bot checks ------------------------------------------------------------------------------

_PROSE = " ".join(
    f"Paragraph {i}: the harbor council met again on Tuesday and argued about the new bridge, "
    "its cost, the ferry timetable and who should pay for the repairs to the old quay."
    for i in range(20)
)


def _article(extra: str, title: str = "Harbor council argues over the bridge") -> bytes:
    return (
        f"<html><head><title>{title}</title><style>.captcha-box {{ display: none }}</style>"
        f"</head><body><article><h1>{title}</h1><p>{_PROSE}</p></article>{extra}</body></html>"
    ).encode()


CHALLENGES = {
    "cloudflare": b'<html><head><title>Just a moment...</title></head><body><div class="main">'
    b"<h1>harbor-herald.test</h1><h2>Checking if the site connection is secure</h2>"
    b'<div id="challenge-stage"></div></div>'
    b'<script src="/cdn-cgi/challenge-platform/h/b/orchestrate/jsch/v1"></script></body></html>',
    "attention": b"<html><head><title>Attention Required! | Cloudflare</title></head><body>"
    b"<h1>Sorry, you have been blocked</h1><form><div class='g-recaptcha'></div></form>"
    b"</body></html>",
    "hcaptcha": b"<html><head><title>harbor-herald.test</title></head><body>"
    b"<h1>Verify you are human</h1><p>Complete the check below to continue.</p>"
    b'<iframe src="https://newassets.hcaptcha.com/captcha/v1/frame"></iframe></body></html>',
    "unusual traffic": b"<html><body><div>Our systems have detected unusual traffic from your "
    b"computer network. Please try your request again later.</div>"
    b'<iframe src="https://www.google.com/recaptcha/api2/anchor?k=x"></iframe></body></html>',
    "datadome": b"<html><head><title>harbor-herald.test</title></head><body>"
    b'<iframe src="https://geo.captcha-delivery.com/captcha/?initialCid=x"></iframe>'
    b"</body></html>",
}
ARTICLES = {
    "hidden g-recaptcha": _article('<div class="g-recaptcha" style="display:none"></div>'),
    "recaptcha badge": _article(
        '<div class="grecaptcha-badge"><iframe src="https://www.google.com/recaptcha/api2/'
        'anchor?size=invisible"></iframe></div>'
        '<script src="https://www.google.com/recaptcha/api.js?render=k"></script>'
    ),
    "invisible recaptcha": _article('<div class="g-recaptcha" data-size="invisible"></div>'),
    "comment form": _article(
        '<form action="/comments"><textarea name="c"></textarea>'
        '<div class="g-recaptcha" data-sitekey="k"></div><button>Post</button></form>'
    ),
    "stylesheet-hidden": _article('<div class="captcha-box"><div class="h-captcha"></div></div>'),
    "an article about captchas": _article("", title="Why 'verify you are human' is everywhere"),
}


def test_a_visible_challenge_page_fails_the_audit_and_a_hidden_widget_does_not(tmp_path):
    pages = [page(f"{H}/wall/{i}", html) for i, html in enumerate(CHALLENGES.values())]
    pages += [page(f"{H}/story/{i}", html) for i, html in enumerate(ARTICLES.values())]
    findings = audit(write_warc(tmp_path / "mixed.warc.gz", pages))
    flagged = {f.url for f in findings if f.kind == "bot_check"}
    walls = dict(zip(CHALLENGES, (f"{H}/wall/{i}" for i in range(len(CHALLENGES))), strict=True))
    stories = dict(zip(ARTICLES, (f"{H}/story/{i}" for i in range(len(ARTICLES))), strict=True))
    missed = {name for name, url in walls.items() if url not in flagged}
    wrongly = {name for name, url in stories.items() if url in flagged}
    assert (missed, wrongly) == (set(), set())


# -- suggest-rules ---------------------------------------------------------------------------


def _suggest(tmp_path, warc):
    out = tmp_path / f"{warc.stem}.rules.yaml"
    result = CliRunner().invoke(app, ["replay", "suggest-rules", str(warc), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out, yaml.safe_load(out.read_text())


def test_suggest_rules_finds_the_noise_a_crawler_records(tmp_path):
    """Noise whose responses differ (a live page changes between loads): the old inference
    (the same bytes at two values) found nothing. Content parameters are left alone."""
    V = "http://video.test"
    body = b"<html>%d</html>"
    loads = [
        (f"{H}/api/most-read?_=1764504000123", 1), (f"{H}/api/most-read?_=1764504061456", 2),
        (f"{H}/api/most-read?_=1764504122789", 3),
        (f"{H}/assets/app.css?v=3f2a9c1b7d", 4), (f"{H}/assets/app.css?v=9b8e7d6c5a", 5),
        (f"{H}/live?ts=2026-12-01T10:00:00Z", 6), (f"{H}/live?ts=2026-12-01T10:05:00Z", 7),
        (f"{H}/live?x=1&cb=k2j4h5", 8), (f"{H}/live?x=1&cb=p9q8r7", 9),
        (f"{H}/news/bridge?sid=a81f9c2e77b04d1e", 10),
        (f"{H}/news/ferry;jsessionid=0A1B2C3D4E5F", 11),
        (f"{H}/search?q=bridge", 12), (f"{H}/search?q=ferry", 13),
        (f"{H}/list?page=1", 14), (f"{H}/list?page=2", 15),
        (f"{V}/watch?v=dQw4w9WgXcQ", 16), (f"{V}/watch?v=Xy7Kp2LmN0q", 17),
    ]  # fmt: skip
    warc = write_warc(tmp_path / "crawl.warc.gz", [page(u, body % n) for u, n in loads])
    out, rules = _suggest(tmp_path, warc)
    assert rules["sites"][H.removeprefix("http://")]["drop_params"] == ["_", "cb", "sid", "ts", "v"]
    assert rules["sites"][H.removeprefix("http://")]["drop_path_params"] == ["jsessionid"]
    assert "video.test" not in rules["sites"]  # a video id is content
    why = rules["evidence"][H.removeprefix("http://")]
    assert "epoch" in why["_"] and "ISO" in why["ts"] and "hex" in why["v"]
    # The file is a rules file: replay matches a new load of each noisy URL to its record.
    m = Matcher(Recording(warc).exchanges, Rules.load(out))
    for asked, recorded in [
        (f"{H}/assets/app.css?v=00ff00ff00", "/assets/app.css?v=3f2a9c1b7d"),
        (f"{H}/live?x=1&cb=zzzz", "/live?x=1&cb=k2j4h5"),
        (f"{H}/news/ferry;jsessionid=FFFF", "/news/ferry;jsessionid=0A1B2C3D4E5F"),
    ]:
        d = m.match("GET", asked)
        assert d.tag == "fuzzy" and d.exchange.url == H + recorded, (asked, d)
    for content in (f"{H}/search?q=harbor", f"{H}/list?page=3", f"{V}/watch?v=other"):
        assert m.match("GET", content).tag == "miss", content
    # Without the inferred rules a new app.css version is a miss.
    plain = Matcher(Recording(warc).exchanges, Rules.load())
    assert plain.match("GET", f"{H}/assets/app.css?v=00ff00ff00").tag == "miss"


@pytest.mark.heavy(10)  # about 10 s on two busy cores
def test_suggest_rules_on_a_newsroom_recording_with_noisy_loads(tmp_path):
    """Recorded from the newsroom (frozen with --at) through loads that carry a crawler's
    noise: epoch and hash cache busters on the front page, ISO timestamps on two different
    searches. The suggested rules replay a new noisy load; the search terms stay content."""
    warc = tmp_path / "noisy.warc.gz"
    result = CliRunner().invoke(
        app,
        [
            "record", f"{H}/?_=1764504000123&v=3f2a9c1b7d", f"{H}/?_=1764504003456&v=9b8e7d6c5a",
            f"{H}/search?q=harbor+bridge&ts=2026-11-30T12:00:03Z",
            f"{H}/search?q=ferry+timetable&ts=2026-11-30T12:00:09Z",
            "--at", "2026-11-30T12:00:00Z", "--out", str(warc), "--port", str(free_port()),
            "--settle-ms", "100",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    out, rules = _suggest(tmp_path, warc)
    site = rules["sites"]["harbor-herald.test"]
    assert {"_", "v", "ts"} <= set(site["drop_params"]) and "q" not in site["drop_params"]

    async def steps(page_):
        front = await page_.goto(f"{H}/?_=1764509999999&v=aaaabbbb1111")
        await page_.goto(f"{H}/search?q=ferry+timetable&ts=2026-12-01T00:00:00Z")
        return front.status, await page_.content()

    (status, search), log = _in_replay(Recording(warc, rules_files=(str(out),)), steps)
    assert status == 200 and log[0]["tag"] == "fuzzy" and "drop v" in log[0]["rule"]
    assert "ferry" in search.lower()
    assert log[0]["recorded_url"].startswith(f"{H}/?_=17645040")
    # Without them the new hash is not the recorded front page.
    assert (
        Matcher(Recording(warc).exchanges, Rules.load())
        .match("GET", f"{H}/?_=1764509999999&v=aaaabbbb1111")
        .tag
        == "miss"
    )
