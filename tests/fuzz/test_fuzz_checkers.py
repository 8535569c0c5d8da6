"""Fuzzing the checkers: whatever an agent answers (any JSON: wrong types, huge or empty fields,
nested junk, the page's own headlines and links in the wrong places), every intent's checker
returns a `Verdict` (success, an accuracy in [0, 1], a reason, JSON-ready details) and never
raises. Tasks are today's real tasks of one site for every intent (the producer, from the
newsroom's feeds), judged against real observations of their pages taken in Chromium."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from newsbench_dagster.core.scoring.checkers import CHECKERS, Component, Evidence, Verdict, check
from newsbench_dagster.core.tasks.intents import ALL_INTENTS, INTENTS
from newsbench_dagster.core.tasks.produce import todays_tasks
from newsbench_dagster.core.web.network import Fetcher, Routing

# 400 examples a property over every intent's checker: about 40 s on two busy cores.
pytestmark = pytest.mark.heavy(40)


@pytest.fixture(scope="module")
def judged(newsroom_server, registry, observe_urls):
    """([(task, its entry page observed, its oracle's probes observed)] one per intent, the
    strings those pages show: headings, titles, links)."""
    day = datetime.now(UTC).date()
    with Fetcher(Routing.via_proxy(newsroom_server.address), registry.allowed_origins) as f:
        tasks = todays_tasks(registry, f, day, sites=["harbor"], articles_per_site=1)
    one_each = {}
    for t in tasks:
        one_each.setdefault(t["intent"], t)
    assert set(one_each) == set(ALL_INTENTS) == set(CHECKERS), sorted(one_each)

    def probed(t: dict) -> list[tuple[str, str]]:
        out = []
        for p in t.get("oracle", {}).get("probes") or []:
            url = t["entry_url"] if p["url"] == "{entry}" else p["url"]
            if url.startswith("http"):
                out.append((url, p["when"]))
        return out

    urls = sorted({u for t in one_each.values() for u in [t["entry_url"], *dict(probed(t))]})
    observed = dict(zip(urls, observe_urls(urls), strict=True))
    shown = sorted(
        {
            v
            for obs in observed.values()
            for v in (obs.get("url"), obs.get("title"), *(obs.get("headings") or [])[:5])
            if isinstance(v, str) and v
        }
    )
    cases = [
        (
            t,
            observed[t["entry_url"]],
            [{"url": u, "when": w, "obs": observed[u]} for u, w in probed(t)],
        )
        for t in one_each.values()
    ]
    return cases, shown


FIELDS = ["headline", "url", "authors", "published", "modified", "text", "time", "none"]
FIELDS += ["summary", "facts", "outlets", "same_story", "status", "stop", "name", "answer"]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**64), 2**64)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=60)
    | st.sampled_from(
        [
            "",
            "none",
            "2026-11-30T12:00:00+00:00",
            "2026-02-30T25:61:00Z",
            "yesterday",
            "99999-01-01",
            "http://harbor-herald.test/",
            "javascript:alert(1)",
            "http://[::1/",
            "approval",
            "x" * 5000,
        ]
    )
)


def answers(shown: list[str]):
    leaf = SCALARS | st.sampled_from(shown)
    return st.recursive(
        leaf,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), inner, max_size=5)
        ),
        max_leaves=15,
    )


def check_verdict(v: Verdict) -> None:
    assert isinstance(v, Verdict)
    assert isinstance(v.success, bool) and isinstance(v.reason, str)
    assert isinstance(v.accuracy, int | float) and not math.isnan(v.accuracy)
    assert 0.0 <= v.accuracy <= 1.0
    assert all(isinstance(c, Component) for c in v.components.values())
    json.dumps(v.as_dict(), default=str)


@given(data=st.data())
def test_any_answer_to_any_intent_gets_a_verdict(judged, data):
    cases, shown = judged
    task, obs, probes = data.draw(st.sampled_from(cases))
    answer = data.draw(answers(shown))
    events = data.draw(st.sampled_from([None, []]))
    final = data.draw(st.sampled_from([obs, None, {}]))
    probes = data.draw(st.sampled_from([probes, []]))
    evidence = Evidence(entry=obs, final=final, probes=probes, events=events, task=task)
    check_verdict(check(task["intent"], answer, evidence=evidence))


@given(data=st.data())
def test_answers_shaped_like_the_intents_get_a_verdict(judged, data):
    """Every field an intent asks for present, each filled with anything."""
    cases, shown = judged
    task, obs, probes = data.draw(st.sampled_from(cases))
    fields = list(task.get("answer_format") or INTENTS[task["intent"]].answer_format)
    answer = {f: data.draw(answers(shown)) for f in fields}
    check_verdict(check(task["intent"], answer, evidence=Evidence(obs, obs, probes, [], task)))


@pytest.mark.parametrize("url", ["A://[", "http://]/", "http://[::1/x"])
def test_an_answer_url_that_does_not_parse_is_judged_not_raised(judged, url):
    """Found by the fuzzing above: urlsplit raised ValueError ("Invalid IPv6 URL") from the
    checkers' page comparison on such a URL, a crash scored as a scorer error."""
    cases, _ = judged
    for task, obs, probes in cases:
        answer = {f: url for f in INTENTS[task["intent"]].answer_format}
        answer |= {"url": url, "outlets": [{"name": "x", "headline": "y", "url": url}] * 2}
        evidence = Evidence(obs, obs, probes, [], task)
        check_verdict(check(task["intent"], answer, evidence=evidence))


@pytest.mark.parametrize("url", [[1], {"a": 1}, 5, None])
def test_an_outlet_whose_url_is_not_text_is_judged_not_raised(judged, url):
    """Found by the fuzzing above: an outlet's URL given as a list or an object reached
    urlsplit (cached, so hashing it) and raised TypeError ('unhashable type')."""
    cases, _ = judged
    ((task, obs, probes),) = [c for c in cases if c[0]["intent"] == "compare_outlets"]
    answer = {"outlets": [{"name": "x", "headline": "y", "url": url}] * 2, "same_story": True}
    check_verdict(check("compare_outlets", answer, evidence=Evidence(obs, obs, probes, [], task)))
