"""The one redaction pass (core.secrets): each encoding of a secret found by the tests' own
scan (tests/support/secret_scan.py) before, and nowhere after; short values refused; rows,
zips (traces) and the artifact store."""

from __future__ import annotations

import base64
import io
import json
import logging
import zipfile
from datetime import UTC, datetime

import pytest

from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.secrets import RedactingStore, Redactor, redacting
from tests.support.secret_scan import encodings, found

# The characters that make each encoding differ from the value (URL, JSON, HTML, base64).
NASTY = "sk-Q9\"<&>'/+=?é\\tail"
REAL = "sk-live-3f9a0c47e1b2d8a6"
MARK = "[redacted:API_KEY]"


@pytest.mark.parametrize("secret", [NASTY, REAL])
def test_every_encoding_is_redacted(secret):
    redactor = Redactor({"API_KEY": secret})
    for name, encoded in encodings(secret).items():
        if name.startswith("base64 in a longer text"):
            continue  # a piece of a longer text: the next test
        text = f"before {encoded} after"
        assert name in found(text, secret)  # the scan sees it
        clean = redactor.text(text)
        assert not found(clean, secret), (name, clean)
        assert MARK in clean and clean.startswith("before ") and clean.endswith(" after")


@pytest.mark.parametrize("secret", [NASTY, REAL])
@pytest.mark.parametrize("before", [b"", b"x", b"xy", b"longer prefix: "])
def test_base64_of_a_longer_text_holding_the_secret_is_redacted(secret, before):
    text = before + f"Authorization: Bearer {secret}; more".encode()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        blob = encode(text).decode()
        assert found(blob, secret) or encode is base64.urlsafe_b64encode
        clean = Redactor({"API_KEY": secret}).text(f"data:{blob}")
        assert MARK in clean and not found(clean, secret), clean


def test_the_browsers_own_url_encoding_and_form_decoding_are_redacted():
    # A browser percent-encodes only some characters of what is typed into a query, and a
    # HAR's queryString reads it back as a form ('+' a space).
    secret = 'ab cd"e+f/g'
    redactor = Redactor({"K": secret})
    for seen in ("ab%20cd%22e+f/g", 'ab cd"e f/g', "ab%20cd%22e%2bf%2fg"):
        assert redactor.text(f"?q={seen}") == "?q=[redacted:K]", seen


def test_short_values_are_refused_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING):
        redactor = Redactor({"TINY_TOKEN": "abc12", "REAL": REAL})
    assert redactor.refused == ["TINY_TOKEN"] and redactor.names == ["REAL"]
    assert "TINY_TOKEN" in caplog.text and "abc12" not in caplog.text
    assert redactor.text("abc12 stays, and so do words") == "abc12 stays, and so do words"
    assert not Redactor({"TINY_TOKEN": "abc12"})  # nothing to redact: falsy, callers skip


def test_a_row_is_redacted_everywhere_in_it_keys_included():
    at = datetime.now(UTC)
    row = {
        "answer": {"headline": f"x {REAL}", REAL: [1, 2.5, True, None]},
        "trajectory": [{"args": {"url": f"https://site.test/?k={REAL}"}}, ("t", REAL)],
        "started_at": at,
        "error": ValueError(f"boom {REAL}"),
    }
    clean = Redactor({"API_KEY": REAL}).value(row)
    assert not found(json.dumps(clean, default=str), REAL)
    assert clean["answer"] == {"headline": f"x {MARK}", MARK: [1, 2.5, True, None]}
    assert clean["trajectory"][1] == ("t", MARK) and clean["started_at"] is at
    assert clean["error"] == f"boom {MARK}"
    assert Redactor().value(row) is row


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


def test_a_trace_zip_has_its_text_members_rewritten_and_its_images_kept():
    png = b"\x89PNG\r\n" + REAL.encode()  # a coincidence in pixels is not text
    trace = _zip(
        {
            "trace.trace": json.dumps({"title": REAL}).encode(),
            "trace.network": f'{{"url": "https://s.test/?k={REAL}"}}'.encode(),
            "resources/abc.html": f"<input value='{REAL}'>".encode(),
            "resources/abc.png": png,
        }
    )
    redactor = Redactor({"API_KEY": REAL})
    with zipfile.ZipFile(io.BytesIO(redactor.zip(trace))) as z:
        assert z.testzip() is None
        members = {n: z.read(n) for n in z.namelist()}
    assert members["resources/abc.png"] == png
    for name in ("trace.trace", "trace.network", "resources/abc.html"):
        assert MARK.encode() in members[name] and not found(members[name], REAL), name
    clean = _zip({"trace.trace": b"{}"})
    assert redactor.zip(clean) is clean  # nothing to redact: the same bytes, not rewritten


def test_the_store_redacts_what_it_writes_but_not_images(tmp_path):
    store = redacting(LocalArtifactStore(tmp_path), Redactor({"API_KEY": REAL}))
    assert isinstance(store, RedactingStore)
    assert redacting(store.inner, Redactor()) is store.inner  # no secrets: no wrapper
    store.put_json("run/run.json", {"answer": REAL})
    store.put("run/a11y.yaml", f"- textbox: {REAL}".encode())
    store.put("run/final.png", REAL.encode())
    assert json.loads((tmp_path / "run/run.json").read_text()) == {"answer": MARK}
    assert (tmp_path / "run/a11y.yaml").read_text() == f"- textbox: {MARK}"
    assert (tmp_path / "run/final.png").read_bytes() == REAL.encode()
    assert store.uri("run/run.json") == (tmp_path / "run/run.json").as_uri()
