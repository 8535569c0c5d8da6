"""The article checkers on a page shaped like much of the real web: no JSON-LD, no OpenGraph,
a visible byline with furniture around it and a date only in visible text. The harness
observes it in real Chromium; the checkers then judge from page understanding's voted values
(the people of the story's byline, the date it read) and still reject wrong answers."""

from __future__ import annotations

import pytest

from newsbench_dagster.core.scoring.checkers import check
from tests.support.page_server import serving

PAGE = """<!doctype html><html lang="en"><head><title>Harbour ferry timetable changes from
December | Kestrel Ledger</title></head><body>
<header><a href="/"><h1>Kestrel Ledger</h1></a></header>
<article><h2 class="headline">Harbour ferry timetable changes from December</h2>
<div class="byline">Posted by <a href="/author/jane-doe">Jane Doe</a>, Senior Transport
Reporter | <a href="https://twitter.com/x">Twitter</a></div>
<p class="dateline">Published 3 March 2024, 10:15 UTC</p>
<p>The harbour ferry will run every twenty minutes from December.</p></article>
<aside class="related"><span class="author">Other Writer</span></aside>
</body></html>"""


URL = "http://kestrel-ledger.test/2024/harbour-ferry-timetable"
TASK = {"oracle": {"target_url": URL}}


@pytest.fixture(scope="module")
def observed(observe_with):
    # The browser's only way out is this server, as a proxy: it answers every URL with PAGE.
    with serving({"/": PAGE}) as server:
        [obs] = observe_with(server, [URL])
    return obs


def test_the_page_has_no_structured_data_and_a_noisy_byline(observed):
    assert observed["jsonld"] == [] and not observed["meta"].get("author")
    assert observed["page"]["authors"] == ["Jane Doe"]


@pytest.mark.parametrize(
    "authors, published, right",
    [
        (["Jane Doe"], "2024-03-03T10:15:00Z", True),
        (["Jane Doe"], "2024-03-03T12:15:00+02:00", True),  # the same instant, written in CEST
        (["Other Writer"], "2024-03-03T10:15:00Z", False),  # another story's author
        (["Kestrel Ledger"], "2024-03-03T10:15:00Z", False),  # the site as author
        (["Jane Doe"], "2024-03-04T10:15:00Z", False),  # a day late
    ],
)
def test_author_and_time_are_judged_from_the_voted_reading(observed, authors, published, right):
    answer = {"authors": authors, "published": published}
    v = check("find_author_and_time", answer, observed, observed, task=TASK)
    assert v.success is right, v.reason
