"""Unsure is not wrong: on a page whose own signals contradict each other (an og:title and a
JSON-LD headline naming two different headlines, nothing visible settling it), the checker
fails closed (never a pass), and scoring then excludes a run whose answer agrees with one of
the readings as `ambiguous`, nobody's failure, while a plainly wrong answer (another story's
headline, a cut headline, a date two days off) stays the agent's failure. The page is served
on loopback and observed in real Chromium."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from newsbench_dagster.core.analytics.kpis import rollup
from newsbench_dagster.core.analytics.tables import frame
from newsbench_dagster.core.scoring.failures import AMBIGUOUS
from newsbench_dagster.core.scoring.score import score_run
from tests.support.page_server import serving

SEO = "Pebble 2 watch adds heart rate, and the Pebble Core is not a watch at all"
VISIBLE = "Pebble Core: the fitness hat trick with GPS, Spotify and 3G"
PAGE = f"""<!doctype html><html lang="en"><head>
<meta property="og:title" content="{SEO}">
<script type="application/ld+json">{{"@type": "NewsArticle", "headline": "{VISIBLE}",
"datePublished": "2024-03-03T10:15:00Z", "author": {{"@type": "Person", "name": "Jane Doe"}}}}
</script></head><body><article><p>The watch tracks heart rate.</p></article></body></html>"""
# An article whose visible byline names someone other than its metadata's author.
BYLINE_PAGE = """<!doctype html><html lang="en"><head><title>Harbour ferry times</title>
<meta name="author" content="Jane Doe">
<meta property="article:published_time" content="2024-03-03T10:15:00Z"></head><body>
<article><h1>Harbour ferry times</h1>
<p class="byline">By Max Mustermann</p><p>The ferry runs every twenty minutes.</p></article>
</body></html>"""
URL = "http://kestrel-ledger.test/2024/pebble"
BYLINE_URL = "http://kestrel-ledger.test/2024/ferry"
TASK = {
    "id": "t-1",
    "site": "harbor",
    "intent": "extract_article_metadata",
    "entry_url": URL,
    "inputs": {"prompt": "headline, authors, published"},
    "reward": {"accuracy_weight": 0.5, "timeliness_weight": 0.25, "efficiency_weight": 0.25},
    "oracle": {"kind": "page_metadata", "target_url": URL},
}


@pytest.fixture(scope="module")
def observed(observe_with):
    with serving({"/pebble": PAGE, "/ferry": BYLINE_PAGE}) as server:
        return observe_with(server, [URL, BYLINE_URL])


def _run(
    obs: dict, headline: str, published: str = "2024-03-03T10:15:00Z", authors=("Jane Doe",)
) -> dict:
    answer = {"headline": headline, "authors": list(authors), "published": published}
    started = datetime(2024, 3, 3, 12, 0, tzinfo=UTC)
    return {
        "run_id": f"r-{headline[:10]}-{published}",
        "task_id": "t-1",
        "site": "harbor",
        "day": started,
        "intent": "extract_article_metadata",
        "agent_name": "a",
        "agent_version": "a@1",
        "trial": 0,
        "steps": 3,
        "tokens": 0,
        "requests": 2,
        "self_reported_success": True,
        "run_status": "answered",
        "started_at": started,
        "answer_seconds": 4.0,
        "answer": answer,
        "answers": [{"value": answer, "seconds": 4.0, "claims_success": True}],
        "safety_events": [],
        "observation": {"entry": obs, "final": obs},
    }


@pytest.mark.parametrize("headline", [SEO, VISIBLE])
def test_an_answer_agreeing_with_either_reading_is_ambiguous_not_failed(observed, headline):
    score = score_run(_run(observed[0], headline), TASK)
    assert score["excluded"] is True and score["success"] is None, score["checker"]
    assert score["failure_class"] == AMBIGUOUS
    assert score["exclusion_reason"] == AMBIGUOUS
    assert "og:title and JSON-LD headline disagree" in score["checker"]["reason"]
    # In the KPIs: run, not scored, nobody's failure.
    (row,) = [
        r
        for r in rollup(frame("run_scores", [score]), {"harbor": 1})
        if r["site"] == "harbor" and r["slice_kind"] == "all"
    ]
    assert (row["n_runs"], row["n_scored"], row["n_env_failures"]) == (1, 0, 0)
    assert row["success_rate"] is None


@pytest.mark.parametrize(
    "headline, published",
    [
        ("Harbour ferry timetable changes from December", "2024-03-03T10:15:00Z"),  # another story
        ("Pebble Core: the fitness hat trick", "2024-03-03T10:15:00Z"),  # cut short
        (VISIBLE, "2024-03-05T10:15:00Z"),  # two days off
    ],
)
def test_a_plainly_wrong_answer_on_the_ambiguous_page_still_fails(observed, headline, published):
    score = score_run(_run(observed[0], headline, published), TASK)
    assert score["excluded"] is False and score["success"] is False, score["checker"]
    assert score["failure_class"] != AMBIGUOUS


@pytest.mark.parametrize(
    "authors, ambiguous",
    [
        (["Jane Doe"], True),  # the metadata's author
        (["Max Mustermann"], True),  # the visible byline's
        (["Other Writer"], False),  # another story's author
        (["Jane Doe", "Max Mustermann"], False),  # both: someone added
    ],
)
def test_a_byline_contradicting_the_metadata_accepts_either_author_as_ambiguous(
    observed, authors, ambiguous
):
    obs = observed[1]
    assert obs["bylines"] == ["By Max Mustermann"]  # what the visible byline says
    task = {**TASK, "entry_url": BYLINE_URL, "oracle": {"target_url": BYLINE_URL}}
    for intent in ("extract_article_metadata", "find_author_and_time"):
        run = {**_run(obs, "Harbour ferry times", authors=authors), "intent": intent}
        score = score_run(run, {**task, "intent": intent})
        assert "contradicts the metadata authors" in score["checker"]["reason"], intent
        assert (score["failure_class"] == AMBIGUOUS) is ambiguous, (intent, score["checker"])
        assert score["success"] is (None if ambiguous else False)
