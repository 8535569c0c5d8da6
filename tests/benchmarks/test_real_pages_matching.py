"""`real_pages.py`'s matching, the same for every reader: a headline is right with or without
the site's (or author's, section's) name set off at the title's start or end, and never when
it is cut or another story's; metascraper's asserted date is the page's latest date, so
inspect answers there with its modified date. The benchmark itself runs in
test_benchmark_smoke."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def rp(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module("real_pages")


@pytest.mark.parametrize(
    ("truth", "got"),
    [
        ("Keep your code private | Engadget", "Keep your code private"),
        ("Opinion | Why 3rd Grade Matters", "Why 3rd Grade Matters"),
        ("Samantha and The Big Lie - John C. Welch - Medium", "Samantha and The Big Lie"),
        ("LWN.net Weekly Edition for March 26 [LWN.net]", "LWN.net Weekly Edition for March 26"),
        ("宇航员在太空中喝酒会怎么样？ _探索者 _光明网", "宇航员在太空中喝酒会怎么样？"),
        ("Caffeine", "Caffeine | Say Why To Drugs on Acast"),  # the reader kept the site name
        ("Meet Wall Street’s New A.I. Sheriffs", "meet wall street's new a.i. sheriffs."),
    ],
)  # fmt: skip
def test_a_headline_is_right_with_or_without_its_decoration(rp, truth, got):
    assert rp.right("headline", truth, got)


@pytest.mark.parametrize(
    ("truth", "got"),
    [
        # cut, without a separator: a different (shorter) headline
        ("Pebble 2 watch adds heart rate, and the Pebble Core isn’t a watch", "Pebble 2 watch"),
        # cut at a quote, as a library did on a real page
        ("Modelo diz que Neymar foi “estúpido” e dá detalhes", "Modelo diz que Neymar foi"),
        # another story's headline, the site's name only, nothing
        ("The Big Tech Threat? | BFI", "The Small Tech Threat?"),
        ("Getting LEAN with Digital Ad UX | IAB", "IAB"),
        ("Getting LEAN with Digital Ad UX | IAB", None),
        # a colon without a space before it belongs to the headline
        ("Genetik: Das Geheimnis der Riesenblumen", "Das Geheimnis der Riesenblumen"),
    ],
)  # fmt: skip
def test_a_cut_or_wrong_headline_is_wrong(rp, truth, got):
    site = rp.site_names({"url": "https://www.iab.com/news/lean", "site_name": "Lean"})
    assert site == ("iab",)
    assert not rp.right("headline", truth, got, site=site)


def test_strict_matching_keeps_the_decoration(rp):
    assert not rp.right("headline", "Bob Dylan - Wikipedia", "Bob Dylan", strict=True)
    assert rp.right("headline", "Bob Dylan - Wikipedia", "bob dylan - wikipedia", strict=True)


def test_metascraper_asks_for_the_latest_date(rp):
    got = {"published": "2019-01-07T15:37:00-05:00", "modified": "2021-05-13T14:01:31-04:00"}
    row = {"title": None, "date_published": "2021-05-13T18:01:31.000Z", "url": None}
    meta = {**row, "source_repo": "microlinkhq/metascraper"}  # `date`: dateModified first
    assert rp.answers(got, "published", "microlinkhq/metascraper") == [got["modified"]]
    assert rp.judge(meta, got, "published")
    assert not rp.judge(meta, got, "published", strict=True)
    # Elsewhere a date is a publication date: the modified one is not asked for.
    assert not rp.judge({**row, "source_repo": "postlight/parser"}, got, "published")
    # No modified date: the published one stands; a date two days off is wrong.
    only = {"published": "2021-05-11T10:00:00Z"}
    assert rp.answers(only, "published", "microlinkhq/metascraper") == [only["published"]]
    assert not rp.judge(meta, only, "published")


def test_an_ambiguous_reading_is_right_when_the_truth_is_either_value(rp):
    """inspect read two supported headlines; the truth is the second: right, and only then."""
    row = {"title": "The Pebble 2 adds heart rate", "url": "https://www.cnet.com/a"}
    row["source_repo"] = "microlinkhq/metascraper"
    got = {"headline": "Pebble Core: a hat trick", "ambiguous": {}}
    assert not rp.judge(row, got, "headline")
    got["ambiguous"]["headline"] = ["Pebble Core: a hat trick", "The Pebble 2 adds heart rate"]
    assert rp.judge(row, got, "headline")
    got["ambiguous"]["headline"] = ["Pebble Core: a hat trick", "Another story"]
    assert not rp.judge(row, got, "headline")
