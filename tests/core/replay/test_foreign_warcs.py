"""Other tools' archives (issue 21, defect 10): revisit records resolved to their originals
(same-URL and URL-agnostic, by digest or by record id), a revisit without its original a
named miss and an audit finding, a revisit-only WARC refused saying so; the bot-check audit
fires on a visible challenge page and not on an article carrying a hidden widget."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from newsbench_dagster.cli import app
from newsbench_dagster.core.replay.audit import audit
from newsbench_dagster.core.replay.matching import Matcher, Rules
from newsbench_dagster.core.replay.replayer import Recording, RecordingError
from newsbench_dagster.paths import SUITES_DIR
from tests.core.replay.test_replay_runs import _in_replay
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
