"""Oracles of five read intents against real pages: find_author_and_time,
identify_topic_page, locate_factbox, summarize_topic and compare_outlets.

One newsroom with its clock frozen serves every page; the tasks are the producer's own (polled
from that server, as the pipeline makes them) and every observation is taken once, in real
Chromium, by the harness's `observe`. Right answers come from the newsroom's world model, so
each checker is shown an answer it must accept, answers it must reject, and evidence it cannot
judge from (it must then say the oracle was unavailable rather than blame the agent).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import pytest

from newsbench_dagster.core.reading import semantic
from newsbench_dagster.core.reading.lexical_similarity import LEXICAL_NAME
from newsbench_dagster.core.scoring.checkers import Evidence, check
from newsbench_dagster.core.tasks.intents import READ_INTENTS
from newsbench_dagster.core.tasks.poll import poll_site
from newsbench_dagster.core.tasks.produce import make_tasks
from newsbench_dagster.core.web.network import Fetcher, Routing
from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.site_world import SiteWorld
from newsbench_dagster.newsroom.stories import Story
from newsbench_dagster.newsroom.world import Newsroom

AT = datetime(2026, 11, 30, 15, 1, tzinfo=UTC)
INVENTED_PERSON = "Gwendolyn Farraday"  # named by no page of the newsroom


@dataclass
class World:
    harbor: SiteWorld
    rhein: SiteWorld
    northgate: SiteWorld
    tasks: dict[str, dict]  # intent -> the producer's task for harbor (partner: rhein)
    obs: dict[str, dict]  # requested URL -> the harness's observation of it
    target: Story  # the producer's find_author_and_time article
    site_byline: Story  # an article whose only byline is the site's name
    boxed: Story  # an article with a four-entry fact box
    plain: Story  # an article without a fact box
    boxed_de: Story  # a German article with a fact box
    topic_section: str  # the section of the producer's identify_topic_page task
    topic_article: Story  # an article of that section
    summary_section: str  # the section of the producer's summarize_topic task

    def home(self, site: SiteWorld) -> str:
        return site.url("/")

    def section_url(self, site: SiteWorld, section: str) -> str:
        return site.url(site.section_path(section))


def _section_of(site: SiteWorld, label: str) -> str:
    return next(s for s in site.spec.sections if site.spec.section_label(s) == label)


@pytest.fixture(scope="module")
def world(registry, observe_with) -> World:
    newsroom = Newsroom(seed=7)
    harbor, rhein = newsroom.site("harbor"), newsroom.site("rhein")
    with NewsroomServer(newsroom, clock=FixedClock(AT)) as server:
        with Fetcher(Routing.via_proxy(server.address), registry.allowed_origins) as fetcher:
            rows = poll_site(registry.get("harbor"), fetcher, None, AT.date())
        made = make_tasks(
            registry.get("harbor"),
            AT.date(),
            rows,
            intents=READ_INTENTS,
            partner=registry.get("rhein"),
        )
        tasks = {t["intent"]: t for t in made}
        target_url = tasks["find_author_and_time"]["oracle"]["target_url"]
        target = harbor.story_for_path(urlsplit(target_url).path, AT)
        recent = harbor.stories(AT, 400)
        site_byline = next(s for s in recent if s.quirk == "byline_is_site")
        boxed = next(s for s in recent if s.factbox and len(s.factbox) == 4 and s.quirk is None)
        given_plain = harbor.story_for_path(urlsplit(tasks["locate_factbox"]["entry_url"]).path, AT)
        plain = (
            given_plain
            if given_plain.factbox is None
            else next(s for s in recent if s.factbox is None and s.quirk is None)
        )
        boxed_de = next(s for s in rhein.stories(AT, 200) if s.factbox and s.quirk is None)
        topic_section = _section_of(harbor, tasks["identify_topic_page"]["inputs"]["topic"])
        topic_article = harbor.section_stories(topic_section, AT)[0]
        summary_section = harbor.section_for_path(
            urlsplit(tasks["summarize_topic"]["entry_url"]).path
        )
        urls = [
            harbor.url("/"),
            rhein.url("/"),
            *(harbor.url(harbor.section_path(s)) for s in harbor.spec.sections),
            rhein.url(rhein.section_path("sport")),
            target.url,
            site_byline.url,
            boxed.url,
            plain.url,
            boxed_de.url,
            topic_article.url,
        ]
        urls = list(dict.fromkeys(urls))
        obs = dict(zip(urls, observe_with(server, urls), strict=True))
    return World(
        harbor=harbor,
        rhein=rhein,
        northgate=newsroom.site("northgate"),
        tasks=tasks,
        obs=obs,
        target=target,
        site_byline=site_byline,
        boxed=boxed,
        plain=plain,
        boxed_de=boxed_de,
        topic_section=topic_section,
        topic_article=topic_article,
        summary_section=summary_section,
    )


def probe(url: str, obs: dict | None = None, when: str = "after", error: str | None = None):
    """A harness probe of `url`: its observation, or the error that stopped it."""
    return (
        {"url": url, "when": when, "error": error}
        if error
        else {"url": url, "when": when, "obs": obs}
    )


def test_the_world_agrees_with_what_the_pages_show(world):
    """The fixtures' ground truth is what the observed pages say (else every case below would
    test the fixture, not the checker)."""
    assert world.target.headline == world.tasks["find_author_and_time"]["inputs"]["headline"]
    assert world.target.authors and world.site_byline.authors == []
    boxed = world.obs[world.boxed.url]["page"]
    assert [(f["label"], f["value"]) for f in boxed["factbox"]] == list(world.boxed.factbox)
    assert world.obs[world.plain.url]["page"]["factbox"] == []
    section = world.obs[world.section_url(world.harbor, world.summary_section)]["page"]
    assert section["kind"] == "collection"
    top = world.harbor.section_stories(world.summary_section, AT)[:3]
    assert [t["headline"] for t in section["listing"][:3]] == [s.headline for s in top]
    for site in (world.harbor, world.rhein):
        home = world.obs[world.home(site)]
        assert home["lead"]["href"] == site.front_page(AT).lead.url


# -- find_author_and_time ----------------------------------------------------------------------


def author_evidence(world: World, story: Story, *, probed: bool = True, final: bool = False):
    """A run asked from the front page about `story`: the harness probes the article after
    the agent (as the producer's task says) and/or the agent ended on it."""
    task = copy.deepcopy(world.tasks["find_author_and_time"])
    task["inputs"]["headline"] = story.headline
    task["oracle"].update(target_url=story.url, probes=[{"url": story.url, "when": "after"}])
    article = world.obs[story.url]
    return Evidence(
        entry=world.obs[world.home(world.harbor)],
        final=article if final else None,
        probes=[probe(story.url, article)] if probed else [],
        task=task,
    )


def right_authorship(story: Story) -> dict:
    return {"authors": list(story.authors), "published": story.published.isoformat()}


def test_author_and_time_accepts_the_article_as_it_states_them(world):
    story = world.target
    ev = author_evidence(world, story)
    v = check("find_author_and_time", right_authorship(story) | {"url": story.url}, evidence=ev)
    assert v.success and v.accuracy == 1.0 and v.right_target, v.as_dict()
    assert v.published == story.published
    # No link is asked for; the time in the site's own zone and the people in one string are
    # the same answer.
    local = story.published.astimezone(ZoneInfo(world.harbor.spec.timezone)).isoformat()
    for answer in (
        right_authorship(story),
        right_authorship(story) | {"published": local},
        right_authorship(story) | {"authors": ", ".join(story.authors)},
        right_authorship(story) | {"url": story.url + "?utm_source=x"},
    ):
        v = check("find_author_and_time", answer, evidence=ev)
        assert v.success, (answer, v.as_dict())
    # The agent's own final page is evidence too when the harness did not probe the article.
    only_final = author_evidence(world, story, probed=False, final=True)
    assert check("find_author_and_time", right_authorship(story), evidence=only_final).success


def test_author_and_time_rejects_the_site_a_wrong_time_and_another_story(world):
    story = world.target
    ev = author_evidence(world, story)
    right = right_authorship(story) | {"url": story.url}

    v = check("find_author_and_time", right | {"authors": [world.harbor.spec.name]}, evidence=ev)
    assert not v.success and not v.components["authors"].detail["plausible"], v.as_dict()

    late = (story.published + timedelta(hours=3)).isoformat()
    v = check("find_author_and_time", right | {"published": late}, evidence=ev)
    assert not v.success and not v.components["published"].passed
    assert v.components["published"].detail["gap_minutes"] == pytest.approx(180, abs=1)

    other = next(
        s
        for s in world.harbor.stories(AT, 60)
        if s.authors and not set(s.authors) & set(story.authors)
    )
    v = check("find_author_and_time", right | {"authors": other.authors}, evidence=ev)
    assert not v.success and not v.components["authors"].passed

    # Another article's link, with this one's people and time, is the wrong article.
    v = check("find_author_and_time", right | {"url": other.url}, evidence=ev)
    assert not v.success and not v.components["url"].passed
    # Adding someone to the byline is wrong too.
    v = check(
        "find_author_and_time", right | {"authors": [*story.authors, INVENTED_PERSON]}, evidence=ev
    )
    assert not v.success


def test_byline_of_only_the_site_wants_no_author(world):
    story = world.site_byline
    ev = author_evidence(world, story)
    published = {"published": story.published.isoformat()}
    for none in ({"authors": []}, {}):
        v = check("find_author_and_time", published | none, evidence=ev)
        assert v.success, (none, v.as_dict())
        assert not v.components["authors"].detail["page_names_a_person"]
    for authors in ([INVENTED_PERSON], [world.harbor.spec.name]):
        v = check("find_author_and_time", published | {"authors": authors}, evidence=ev)
        assert not v.success and not v.components["authors"].passed, authors


def test_author_and_time_is_unavailable_without_the_target(world):
    story = world.target
    right = right_authorship(story)
    # Neither probed nor visited: only the front page was seen.
    v = check("find_author_and_time", right, evidence=author_evidence(world, story, probed=False))
    assert not v.success and v.unavailable and story.url in v.reason
    # The probe failed.
    ev = author_evidence(world, story, probed=False)
    ev.probes = [probe(story.url, error="net::ERR_CONNECTION_RESET")]
    assert check("find_author_and_time", right, evidence=ev).unavailable
    # The harness looked at another article, not this one.
    ev.probes = [probe(world.site_byline.url, world.obs[world.site_byline.url])]
    assert check("find_author_and_time", right, evidence=ev).unavailable
    # The task names no target at all.
    ev = author_evidence(world, story)
    del ev.task["oracle"]["target_url"]
    assert check("find_author_and_time", right, evidence=ev).unavailable


@pytest.mark.parametrize(
    "answer,reason",
    [
        ("Sofia Ramirez, this morning", "answer is not an object"),
        ({"authors": [1, 2], "published": "2026-11-30T12:00:00Z"}, "answer field 'authors'"),
        ({"authors": ["A"], "published": 20261130}, "answer field 'published' is int"),
        ({}, "mismatch"),
        ({"authors": [], "published": ""}, "mismatch"),
        ({"authors": ["Sofia Ramirez"], "published": "yesterday-ish"}, "mismatch"),
    ],
)
def test_author_and_time_rejects_malformed_and_empty_answers(world, answer, reason):
    v = check("find_author_and_time", answer, evidence=author_evidence(world, world.target))
    assert not v.success and not v.unavailable and reason in v.reason, v.reason


# -- identify_topic_page -----------------------------------------------------------------------


def topic_evidence(world: World, answer_url: str | None, topic: str | None = None, **probe_kw):
    """The producer's task (asked from the front page); the harness probes the answer's URL
    after the agent, as the task's oracle says."""
    task = copy.deepcopy(world.tasks["identify_topic_page"])
    if topic is not None:
        task["inputs"]["topic"] = topic
    probes = []
    if answer_url is not None:
        probes = [probe(answer_url, world.obs.get(answer_url), **probe_kw)]
    return Evidence(entry=world.obs[world.home(world.harbor)], probes=probes, task=task)


def test_topic_page_accepts_the_section_page(world):
    url = world.section_url(world.harbor, world.topic_section)
    v = check("identify_topic_page", {"url": url}, evidence=topic_evidence(world, url))
    assert v.success and v.accuracy == 1.0 and v.right_target, v.as_dict()
    assert v.components["lists_stories"].detail["n"] >= 3
    # Without the trailing slash it is the same page.
    assert check(
        "identify_topic_page", {"url": url.rstrip("/")}, evidence=topic_evidence(world, url)
    ).success
    # Every section is its own topic's page.
    for section in world.harbor.spec.sections:
        url = world.section_url(world.harbor, section)
        ev = topic_evidence(world, url, topic=world.harbor.spec.section_label(section))
        assert check("identify_topic_page", {"url": url}, evidence=ev).success, section


def test_topic_page_rejects_home_other_section_and_an_article(world):
    home = world.home(world.harbor)
    v = check("identify_topic_page", {"url": home}, evidence=topic_evidence(world, None))
    assert not v.success and not v.unavailable and v.reason == "not a topic page but a home page"

    other = next(s for s in world.harbor.spec.sections if s != world.topic_section)
    url = world.section_url(world.harbor, other)
    v = check("identify_topic_page", {"url": url}, evidence=topic_evidence(world, url))
    assert (
        not v.success and not v.components["heading"].passed and v.components["collection"].passed
    )

    article = world.topic_article.url
    v = check("identify_topic_page", {"url": article}, evidence=topic_evidence(world, article))
    assert not v.success and not v.components["collection"].passed
    assert v.reason == "not a topic page but a article page"


def test_topic_page_rejects_another_sites_page_of_the_same_name(world):
    """Rheinblatt's "Sport" page is a topic page named Sport, but not one of this site's."""
    url = world.section_url(world.rhein, "sport")
    ev = topic_evidence(world, url, topic=world.harbor.spec.section_label("sport"))
    v = check("identify_topic_page", {"url": url}, evidence=ev)
    assert not v.success and not v.components["on_site"].passed
    assert v.components["heading"].passed and v.components["collection"].passed


def test_topic_page_unobserved_answer_error_and_no_url(world):
    # Off the site: the runner does not probe it, so nothing was observed.
    off = "https://example.com/business/"
    v = check("identify_topic_page", {"url": off}, evidence=topic_evidence(world, None))
    assert not v.success and not v.unavailable and "is not a page of the site" in v.reason
    # The harness tried the page and failed: the oracle cannot judge.
    url = world.section_url(world.harbor, world.topic_section)
    ev = topic_evidence(world, url, error="Timeout 15000ms exceeded")
    v = check("identify_topic_page", {"url": url}, evidence=ev)
    assert not v.success and v.unavailable and "Timeout" in v.reason
    # No link in the answer is the agent's failure.
    for answer in ({}, {"url": ""}, {"url": None}, None):
        v = check("identify_topic_page", answer, evidence=topic_evidence(world, url))
        assert not v.success and not v.unavailable and v.reason == "no URL in the answer"
    # A task without a topic cannot be judged.
    ev = topic_evidence(world, url)
    del ev.task["inputs"]["topic"]
    assert check("identify_topic_page", {"url": url}, evidence=ev).unavailable


@pytest.mark.parametrize(
    "answer", ["http://harbor-herald.test/news/business/", {"url": 7}, {"url": ["a"]}]
)
def test_topic_page_rejects_wrong_types(world, answer):
    url = world.section_url(world.harbor, world.topic_section)
    v = check("identify_topic_page", answer, evidence=topic_evidence(world, url))
    assert not v.success and not v.unavailable and v.accuracy == 0


# -- locate_factbox ----------------------------------------------------------------------------


def factbox_evidence(world: World, story: Story, *, observed: bool = True):
    task = copy.deepcopy(world.tasks["locate_factbox"])
    task["entry_url"] = story.url
    obs = world.obs[story.url] if observed else None
    return Evidence(entry=obs, final=obs, task=task)


def fact_shapes(facts: tuple[tuple[str, str], ...]) -> dict[str, dict]:
    """The same entries in every shape an agent may answer them."""
    return {
        "dict": {"facts": dict(facts)},
        "pairs": {"facts": [[label, value] for label, value in facts]},
        "objects": {"facts": [{"label": label, "value": value} for label, value in facts]},
        "strings": {"facts": [f"{label}: {value}" for label, value in facts]},
        "factbox_key": {"factbox": [f"{label}: {value}" for label, value in facts]},
        "any_order": {"facts": dict(reversed(facts))},
        "colons_and_numbers": {
            "facts": {f"{label}:": int(v) if v.isdigit() else v for label, v in facts}
        },
    }


@pytest.mark.parametrize("shape", list(fact_shapes(()).keys()))
def test_factbox_accepts_its_entries_in_any_shape(world, shape):
    answer = fact_shapes(world.boxed.factbox)[shape]
    v = check("locate_factbox", answer, evidence=factbox_evidence(world, world.boxed))
    assert v.success and v.accuracy == 1.0 and v.right_target, v.as_dict()
    assert v.components["complete"].detail == {"found": 4, "shown": 4}


def test_factbox_accepts_a_german_box(world):
    story = world.boxed_de
    answer = {"facts": [f"{label}: {value}" for label, value in story.factbox]}
    v = check("locate_factbox", answer, evidence=factbox_evidence(world, story))
    assert v.success, v.as_dict()
    assert not check(
        "locate_factbox", {"none": True}, evidence=factbox_evidence(world, story)
    ).success


def test_factbox_rejects_none_altered_invented_and_missing_entries(world):
    story, ev = world.boxed, factbox_evidence(world, world.boxed)
    facts = dict(story.factbox)
    for none in ({"none": True}, {"facts": []}, {"facts": {}}):
        v = check("locate_factbox", none, evidence=ev)
        assert not v.success and v.reason == "answered none, but the article has a fact box", none

    figure = next(label for label, value in story.factbox if value.isdigit())
    altered = facts | {figure: str(int(facts[figure]) + 1)}
    v = check("locate_factbox", {"facts": altered}, evidence=ev)
    assert not v.success and not v.components["nothing_invented"].passed, v.as_dict()
    assert v.components["complete"].detail["found"] == 3

    invented = facts | {"Budget": "$4.2 million"}
    v = check("locate_factbox", {"facts": invented}, evidence=ev)
    assert not v.success and v.components["complete"].passed
    assert v.components["nothing_invented"].detail["invented"] == ["Budget: $4.2 million"]

    missing = dict(list(story.factbox)[:-1])
    v = check("locate_factbox", {"facts": missing}, evidence=ev)
    assert not v.success and not v.components["complete"].passed and v.accuracy < 1

    # Another article's box is not this one's.
    v = check("locate_factbox", {"facts": dict(world.boxed_de.factbox)}, evidence=ev)
    assert not v.success and not v.right_target


def test_factbox_rejects_a_wrong_date(world):
    story, ev = world.boxed, factbox_evidence(world, world.boxed)
    facts = dict(story.factbox)
    date_label, date = story.factbox[-1]  # the fourth entry is the local date
    wrong_year = date.replace(str(AT.year), str(AT.year - 1))
    assert wrong_year != date
    v = check("locate_factbox", {"facts": facts | {date_label: wrong_year}}, evidence=ev)
    assert not v.success, v.as_dict()


def test_factbox_none_is_right_when_the_article_has_none(world):
    ev = factbox_evidence(world, world.plain)
    for none in ({"none": True}, {"facts": []}, {"factbox": {}}, {"none": True, "facts": None}):
        v = check("locate_factbox", none, evidence=ev)
        assert v.success and v.accuracy == 1.0 and v.reason == "correctly none", none
    for invented in (
        {"facts": dict(world.boxed.factbox)},
        {"facts": ["Place: Springfield"]},
        {"none": True, "facts": ["Figure: 12"]},
    ):
        v = check("locate_factbox", invented, evidence=ev)
        assert not v.success and v.reason == "the article has no fact box", invented


@pytest.mark.parametrize("answer", [None, {}])
def test_factbox_no_answer_is_not_an_answer_of_none(world, answer):
    v = check("locate_factbox", answer, evidence=factbox_evidence(world, world.plain))
    assert not v.success, v.as_dict()


def test_factbox_unavailable_without_an_observation_and_bad_types(world):
    v = check(
        "locate_factbox",
        {"none": True},
        evidence=factbox_evidence(world, world.boxed, observed=False),
    )
    assert not v.success and v.unavailable
    # Only an observation of another page: still nothing of the article.
    ev = factbox_evidence(world, world.boxed, observed=False)
    ev.probes = [probe(world.plain.url, world.obs[world.plain.url])]
    assert check("locate_factbox", {"none": True}, evidence=ev).unavailable
    ev = factbox_evidence(world, world.boxed)
    for bad in (
        "Place: Maple Hill",
        ["Place", "Maple Hill"],
        {"facts": "the usual"},
        {"facts": [1, 2]},
    ):
        v = check("locate_factbox", bad, evidence=ev)
        assert not v.success and not v.unavailable, bad


# -- summarize_topic ---------------------------------------------------------------------------


@pytest.fixture(params=["default", "lexical"])
def judge(request, monkeypatch):
    """The similarity backend the summary oracle uses: the default one (MiniLM when the
    `semantic` extra is installed) and, forced, the lexical fallback."""
    if request.param == "lexical":
        lexical = semantic.backend("lexical")
        monkeypatch.setattr(semantic, "backend", lambda *a, **k: lexical)
    return semantic.backend()


def summary_evidence(world: World) -> Evidence:
    url = world.tasks["summarize_topic"]["entry_url"]
    obs = world.obs[url]
    return Evidence(entry=obs, final=obs, task=copy.deepcopy(world.tasks["summarize_topic"]))


def teasers(stories: list[Story]) -> str:
    return " ".join(s.summary for s in stories)


def test_summary_accepts_the_sections_top_stories(world, judge):
    top = world.harbor.section_stories(world.summary_section, AT)[:3]
    ev = summary_evidence(world)
    for summary in (
        teasers(top),
        " ".join(
            f"The Harbor Herald reports that {s.headline[0].lower()}{s.headline[1:]}." for s in top
        ),
    ):
        v = check("summarize_topic", {"summary": summary}, evidence=ev)
        assert v.success and v.right_target, (summary, v.as_dict())
        assert v.components["covers_top_stories"].detail["covered"] >= 3
        assert v.backend == judge.name
        assert ("fallback" in v.reason) == judge.is_fallback


def test_summary_rejects_other_sections_other_sites_and_one_story(world, judge):
    ev = summary_evidence(world)
    top = world.harbor.section_stories(world.summary_section, AT)[:3]
    other_section = next(s for s in world.harbor.spec.sections if s != world.summary_section)
    elsewhere = world.harbor.section_stories(other_section, AT)[:3]
    v = check("summarize_topic", {"summary": teasers(elsewhere)}, evidence=ev)
    assert not v.success and not v.right_target, v.as_dict()
    assert v.backend == judge.name

    another_site = world.northgate.stories(AT, 3)
    v = check("summarize_topic", {"summary": teasers(another_site)}, evidence=ev)
    assert not v.success and not v.components["grounded"].passed

    single = f"{top[0].summary} {top[0].headline}."
    v = check("summarize_topic", {"summary": single}, evidence=ev)
    assert not v.success and v.components["grounded"].passed
    assert v.components["covers_top_stories"].detail["covered"] == 1

    # The right summary with one sentence about a story this page does not list.
    v = check("summarize_topic", {"summary": f"{teasers(top)} {elsewhere[0].summary}"}, evidence=ev)
    assert not v.success and v.components["covers_top_stories"].passed, v.as_dict()
    assert v.components["grounded"].detail["ungrounded"] == [elsewhere[0].summary[:80]]


@pytest.mark.parametrize(
    "answer",
    [{"summary": ""}, {"summary": "Sport news"}, {"summary": "   "}, {}, None, {"summary": None}],
)
def test_summary_rejects_empty_and_too_short(world, answer):
    v = check("summarize_topic", answer, evidence=summary_evidence(world))
    assert not v.success and not v.unavailable and v.accuracy < 1, v.as_dict()


@pytest.mark.parametrize(
    "answer", ["Three stories about sport.", {"summary": ["a", "b"]}, {"summary": 42}]
)
def test_summary_rejects_wrong_types(world, answer):
    v = check("summarize_topic", answer, evidence=summary_evidence(world))
    assert not v.success and v.accuracy == 0


def test_summary_reason_names_the_fallback(world, monkeypatch):
    lexical = semantic.backend("lexical")
    monkeypatch.setattr(semantic, "backend", lambda *a, **k: lexical)
    top = world.harbor.section_stories(world.summary_section, AT)[:3]
    v = check("summarize_topic", {"summary": teasers(top)}, evidence=summary_evidence(world))
    assert v.success and v.backend == LEXICAL_NAME
    assert v.reason.endswith(f"(judged by the {LEXICAL_NAME})")
    assert v.as_dict()["backend"] == LEXICAL_NAME


def test_summary_without_an_observation_is_not_a_pass(world):
    ev = Evidence(task=copy.deepcopy(world.tasks["summarize_topic"]))
    top = world.harbor.section_stories(world.summary_section, AT)[:3]
    v = check("summarize_topic", {"summary": teasers(top)}, evidence=ev)
    assert not v.success


def test_summary_without_an_observation_is_unavailable(world):
    ev = Evidence(task=copy.deepcopy(world.tasks["summarize_topic"]))
    top = world.harbor.section_stories(world.summary_section, AT)[:3]
    v = check("summarize_topic", {"summary": teasers(top)}, evidence=ev)
    assert v.unavailable, v.as_dict()


# -- compare_outlets ---------------------------------------------------------------------------


def outlets_evidence(world: World, partner_probes: list[dict] | None = None) -> Evidence:
    """The producer's task: the first outlet's front page is the entry, the partner's is
    probed before and after the agent, the entry again after."""
    harbor_home, rhein_home = world.home(world.harbor), world.home(world.rhein)
    if partner_probes is None:
        partner_probes = [
            probe(rhein_home, world.obs[rhein_home], when="before"),
            probe(rhein_home, world.obs[rhein_home], when="after"),
        ]
    return Evidence(
        entry=world.obs[harbor_home],
        probes=[*partner_probes, probe(harbor_home, world.obs[harbor_home])],
        task=copy.deepcopy(world.tasks["compare_outlets"]),
    )


def lead_entry(site: SiteWorld, story: Story | None = None, named: bool = True) -> dict:
    story = story or site.front_page(AT).lead
    out = {"headline": story.headline, "url": story.url}
    return {"site": site.spec.name, **out} if named else out


def test_compare_outlets_accepts_both_leads(world):
    ev = outlets_evidence(world)
    both = [lead_entry(world.harbor), lead_entry(world.rhein)]
    for answer in ({"outlets": both, "same_story": False}, {"outlets": both}):
        v = check("compare_outlets", answer, evidence=ev)
        assert v.success and v.accuracy == 1.0 and v.right_target, (answer, v.as_dict())
    v = check("compare_outlets", {"outlets": both, "same_story": False}, evidence=ev)
    assert v.components["same_story"].detail == {"expected": False, "given": False}
    assert v.components["outlet_2"].detail["home"] == world.home(world.rhein)


def test_compare_outlets_matches_outlets_by_url_in_any_order(world):
    ev = outlets_evidence(world)
    swapped = [lead_entry(world.rhein, named=False), lead_entry(world.harbor, named=False)]
    v = check("compare_outlets", {"outlets": swapped, "same_story": False}, evidence=ev)
    assert v.success, v.as_dict()


def test_compare_outlets_rejects_same_story_missing_outlet_and_another_story(world):
    ev = outlets_evidence(world)
    both = [lead_entry(world.harbor), lead_entry(world.rhein)]
    v = check("compare_outlets", {"outlets": both, "same_story": True}, evidence=ev)
    assert not v.success and v.components["outlet_1"].passed and v.components["outlet_2"].passed
    assert not v.components["same_story"].passed

    v = check("compare_outlets", {"outlets": both[:1], "same_story": False}, evidence=ev)
    assert not v.success and v.components["outlet_1"].passed
    assert v.components["outlet_2"].detail["reason"] == "outlet missing from the answer"

    runner_up = world.rhein.front_page(AT).others[0]
    answer = {"outlets": [both[0], lead_entry(world.rhein, runner_up)], "same_story": False}
    v = check("compare_outlets", answer, evidence=ev)
    assert not v.success and v.components["outlet_1"].passed and not v.components["outlet_2"].passed
    assert v.right_target  # one of the two is right

    # Both leads swapped between the outlets' names: neither outlet is right.
    crossed = [
        {**lead_entry(world.rhein), "site": world.harbor.spec.name, "url": None},
        {**lead_entry(world.harbor), "site": world.rhein.spec.name, "url": None},
    ]
    v = check("compare_outlets", {"outlets": crossed}, evidence=ev)
    assert not v.success and not v.right_target


@pytest.mark.parametrize(
    "answer",
    [
        None,
        {},
        "Both lead with the budget",
        {"outlets": "Harbor and Rheinblatt"},
        {"outlets": [1, 2]},
    ],
)
def test_compare_outlets_rejects_empty_and_malformed(world, answer):
    v = check("compare_outlets", answer, evidence=outlets_evidence(world))
    assert not v.success and not v.unavailable and v.accuracy < 1


def test_compare_outlets_unavailable_without_the_partners_page(world):
    rhein_home = world.home(world.rhein)
    answer = {"outlets": [lead_entry(world.harbor), lead_entry(world.rhein)], "same_story": False}
    for partner_probes in (
        [],
        [probe(rhein_home, when="before", error="net::ERR_NAME_NOT_RESOLVED")],
    ):
        v = check("compare_outlets", answer, evidence=outlets_evidence(world, partner_probes))
        assert not v.success and v.unavailable and rhein_home in v.reason, v.as_dict()
    # A task whose oracle names no second outlet cannot be judged either.
    ev = outlets_evidence(world)
    ev.task["oracle"]["probes"] = [{"url": "{entry}", "when": "after"}]
    v = check("compare_outlets", answer, evidence=ev)
    assert v.unavailable and "fewer than two outlets" in v.reason
