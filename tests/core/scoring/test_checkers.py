"""The oracle against real pages: it accepts the right answer and rejects wrong ones."""

from __future__ import annotations

from datetime import timedelta

import pytest

from newsbench_dagster.core.reading.text import fuzzy
from newsbench_dagster.core.scoring.checkers import check


@pytest.fixture(scope="module")
def harbor(newsroom_server):
    return newsroom_server.newsroom.site("harbor")


@pytest.fixture(scope="module")
def home_and_lead(newsroom_server, harbor, observe_urls):
    """Observations of the homepage and of its lead article, plus the ground truth lead."""
    now = newsroom_server.now()
    lead = harbor.front_page(now).lead
    home, article = observe_urls([f"{harbor.spec.origin}/", harbor.url(lead.path)])
    # The lead rotates on the clock; skip the rare test that straddles a rotation.
    if harbor.front_page(newsroom_server.now()).lead.k != lead.k:
        pytest.skip("lead rotated while observing")
    return home, article, lead


def test_top_headline_accepts_the_lead(home_and_lead, harbor):
    home, article, lead = home_and_lead
    v = check(
        "find_top_headline",
        {"headline": lead.headline, "url": harbor.url(lead.path)},
        home,
        article,
    )
    assert v.success, v.as_dict()
    # Answering from the homepage alone (no click into the article) is also correct.
    v = check(
        "find_top_headline", {"headline": lead.headline, "url": harbor.url(lead.path)}, home, home
    )
    assert v.success, v.as_dict()


def test_top_headline_rejects_another_story(home_and_lead, harbor, newsroom):
    home, article, lead = home_and_lead
    others = harbor.front_page(newsroom.now()).others
    wrong = min(others, key=lambda s: fuzzy(s.headline, lead.headline))
    v = check(
        "find_top_headline", {"headline": wrong.headline, "url": harbor.url(wrong.path)}, home, home
    )
    assert not v.success
    assert v.accuracy < 0.6
    # The right headline with a link to another story is not the lead either.
    v = check(
        "find_top_headline", {"headline": lead.headline, "url": harbor.url(wrong.path)}, home, home
    )
    assert not v.success and v.reason == "link is not the lead story"


def test_top_headline_rejects_empty_and_garbage(home_and_lead):
    home, article, _ = home_and_lead
    assert not check("find_top_headline", {}, home, article).success
    assert not check("find_top_headline", "not a dict", home, article).success
    assert not check("find_top_headline", {"headline": "Weather is nice"}, home, home).success


def test_top_headline_tolerates_benign_drift(home_and_lead, harbor):
    home, article, lead = home_and_lead
    drifted = f"Opinion: {lead.headline.replace(' ', '  ')} | The Harbor Herald"
    v = check(
        "find_top_headline",
        {"headline": drifted, "url": harbor.url(lead.path) + "?utm=x"},
        home,
        article,
    )
    assert v.success, v.as_dict()


def test_top_headline_fails_closed_on_conflicting_page_signals(home_and_lead, harbor):
    home, _, lead = home_and_lead
    tampered = {**home, "headings": [dict(h) for h in home["headings"]]}
    first_visible = next(h for h in tampered["headings"] if h["href"] and h["above_fold"])
    first_visible["text"] = "Completely different story about something else entirely"
    answer = {"headline": lead.headline, "url": harbor.url(lead.path)}
    # The front page's ItemList agrees with the lead's heading: the odd one is outvoted.
    v = check("find_top_headline", answer, tampered, tampered)
    assert v.success and not v.conflict, v.as_dict()
    # Without metadata to distinguish them, two disagreeing signals fail closed.
    blind = {**tampered, "jsonld": [n for n in home["jsonld"] if n.get("@type") != "ItemList"]}
    v = check("find_top_headline", answer, blind, blind)
    assert not v.success and v.conflict


def test_deceptive_heading_is_outvoted_not_a_conflict(observe_with):
    """An adversarial front page: a sponsored heading bigger than the lead. An agent that
    answers the lead from the front page alone passes; one that takes the big heading fails."""
    from datetime import UTC, datetime

    from newsbench_dagster.newsroom.clock import FixedClock
    from newsbench_dagster.newsroom.server import NewsroomServer
    from newsbench_dagster.newsroom.world import Newsroom

    newsroom = Newsroom(seed=7)
    site = newsroom.site("northgate")
    start = datetime(2026, 11, 30, 12, tzinfo=UTC)
    at = next(
        start + i * site.rotation
        for i in range(12)
        if site.deceptive_heading(start + i * site.rotation)
    )
    with NewsroomServer(newsroom, clock=FixedClock(at)) as server:
        (home,) = observe_with(server, [site.url("/")])
    lead = site.front_page(at).lead
    right = check("find_top_headline", {"headline": lead.headline, "url": lead.url}, home, home)
    assert right.success and not right.conflict, right.as_dict()
    trap = {"headline": site.deceptive_heading(at), "url": site.url("/sponsored/offer")}
    wrong = check("find_top_headline", trap, home, home)
    assert not wrong.success and wrong.components["headline"].score < 0.8


@pytest.fixture(scope="module")
def article_obs(newsroom_server, observe_urls):
    site = newsroom_server.newsroom.site("rhein")
    # A page without a deliberate metadata defect (those have their own tests below).
    story = next(s for s in site.stories(newsroom_server.now(), limit=60)[1:] if s.quirk is None)
    (obs,) = observe_urls([site.url(story.path)])
    return obs, story, site


@pytest.fixture(scope="module")
def site_byline_obs(newsroom_server, observe_urls):
    """An article whose only byline is the publication's name."""
    site = newsroom_server.newsroom.site("rhein")
    recent = site.stories(newsroom_server.now(), limit=400)
    story = next(s for s in recent if s.quirk == "byline_is_site")
    (obs,) = observe_urls([site.url(story.path)])
    return obs, story, site


def _truth(story, now):
    return {
        "headline": story.headline,
        "authors": list(story.authors),
        "published": story.published.isoformat(),
        "modified": story.modified_at(now).isoformat(),
    }


def test_article_metadata_accepts_truth(article_obs, newsroom):
    obs, story, _ = article_obs
    v = check("extract_article_metadata", _truth(story, newsroom.now()), obs, obs)
    assert v.success, v.as_dict()
    assert v.accuracy == 1.0


@pytest.mark.parametrize(
    "field,value",
    [
        ("headline", "Something that was never written on this page"),
        ("authors", ["The Daily Nobody"]),
        ("authors", []),
        ("published", "shift"),
        ("published", None),
    ],
)
def test_article_metadata_rejects_each_wrong_field(article_obs, newsroom, field, value):
    obs, story, site = article_obs
    answer = _truth(story, newsroom.now())
    if value == "shift":
        value = (story.published + timedelta(hours=3)).isoformat()
    answer[field] = value
    v = check("extract_article_metadata", answer, obs, obs)
    assert not v.success, (field, v.as_dict())
    assert 0 <= v.accuracy < 1


def test_article_metadata_accepts_other_timezone(article_obs, newsroom):
    obs, story, _ = article_obs
    answer = _truth(story, newsroom.now())
    answer["published"] = story.published.astimezone().strftime("%Y-%m-%d %H:%M:%S%z")
    assert check("extract_article_metadata", answer, obs, obs).success


def test_site_name_is_not_a_byline(article_obs, newsroom):
    obs, story, site = article_obs
    answer = _truth(story, newsroom.now()) | {"authors": [site.spec.name]}
    v = check("extract_article_metadata", answer, obs, obs)
    assert not v.success and not v.components["byline"].detail["plausible"]


def test_article_metadata_fails_closed_when_byline_contradicts_metadata(article_obs, newsroom):
    obs, story, _ = article_obs
    tampered = {**obs, "bylines": ["Von Jemand Ganz Anderes"]}
    v = check("extract_article_metadata", _truth(story, newsroom.now()), tampered, tampered)
    assert not v.success and v.conflict


def test_unknown_intent_is_not_a_pass(article_obs):
    obs, _, _ = article_obs
    assert not check("summarize_topic", {"summary": "x"}, obs, obs).success


def test_page_naming_only_the_site_wants_no_author(site_byline_obs, newsroom):
    obs, story, site = site_byline_obs
    assert story.authors == []
    answer = _truth(story, newsroom.now())
    v = check("extract_article_metadata", answer, obs, obs)
    assert v.success, v.as_dict()
    # "No author" said any usual way is the same answer (found by the meta-evaluation).
    for nobody in ("", [""], None, "  "):
        v = check("extract_article_metadata", answer | {"authors": nobody}, obs, obs)
        assert v.success, (nobody, v.as_dict())
    # The publication is not a person, and inventing a reporter is wrong too.
    for authors in ([site.spec.name], ["Anna Schmidt"]):
        v = check("extract_article_metadata", answer | {"authors": authors}, obs, obs)
        assert not v.success and not v.components["byline"].passed, authors


def test_authors_must_be_the_same_people(newsroom_server, observe_urls, newsroom):
    """Two people on the page: naming one, or adding a third, is wrong; joining both in one
    string ("A, B") names the same people and is right."""
    site = newsroom_server.newsroom.site("rhein")
    story = next(
        s
        for s in site.stories(newsroom_server.now(), limit=400)[1:]
        if len(s.authors) == 2 and s.quirk is None
    )
    (obs,) = observe_urls([site.url(story.path)])
    right = _truth(story, newsroom.now())
    assert check("extract_article_metadata", right, obs, obs).success
    joined = right | {"authors": [", ".join(story.authors)]}
    assert check("extract_article_metadata", joined, obs, obs).success
    for authors in ([story.authors[0]], [*story.authors, "Anna Schmidt"]):
        v = check("extract_article_metadata", right | {"authors": authors}, obs, obs)
        assert not v.success and not v.components["byline"].passed, authors


@pytest.mark.parametrize(
    "answer,reason",
    [
        ("just a string", "answer is not an object but str"),
        ([1, 2], "answer is not an object but list"),
        ({"headline": ["a"], "url": None}, "answer field 'headline' is list, not text"),
        ({"headline": "x" * 5000}, "answer field 'headline' is 5000 characters long"),
        ({"headline": "A", "authors": [1, 2]}, "answer field 'authors' is not text"),
        ({"headline": "A", "published": 20261130}, "answer field 'published' is int, not text"),
    ],
)
def test_malformed_answers_fail_with_the_reason(article_obs, answer, reason):
    obs, _, _ = article_obs
    for intent in ("find_top_headline", "extract_article_metadata"):
        v = check(intent, answer, obs, obs)
        assert not v.success and v.accuracy == 0 and v.reason.startswith(reason), v.reason


def test_seo_og_title_is_settled_by_the_visible_headline(newsroom_server, observe_urls, newsroom):
    """og:title far from the JSON-LD headline (an SEO title): the page's h1 agrees with the
    JSON-LD, so this is no conflict; either title is accepted, another story is not."""
    from newsbench_dagster.core.reading.text import fuzzy

    now = newsroom_server.now()
    found = None
    for key in ("harbor", "northgate", "rhein", "isar", "lac", "fleuve"):
        site = newsroom_server.newsroom.site(key)
        for s in site.stories(now, 2000):
            if s.quirk == "og_differs" and fuzzy(s.og_title, s.headline, (site.spec.name,)) < 0.7:
                found = (site, s)
                break
        if found:
            break
    if found is None:
        pytest.skip("no strongly differing og:title among recent stories")
    site, story = found
    (obs,) = observe_urls([site.url(story.path)])
    right = _truth(story, newsroom.now())
    v = check("extract_article_metadata", right, obs, obs)
    assert v.success and not v.conflict, v.as_dict()
    assert check("extract_article_metadata", right | {"headline": story.og_title}, obs, obs).success
    other = site.stories(now, 3)[0 if site.stories(now, 3)[0].k != story.k else 1]
    assert not check(
        "extract_article_metadata", right | {"headline": other.headline}, obs, obs
    ).success
    # Without the visible headline's vote the same disagreement still fails closed.
    blind = {**obs, "page": None}
    assert check("extract_article_metadata", right, blind, blind).conflict


def test_partial_answers_fail_as_the_contract_says(home_and_lead, harbor, article_obs, newsroom):
    """What weak models answer: a headline cut short, a time with no date. Neither is the
    answer the task asked for, however close."""
    home, article, lead = home_and_lead
    words = lead.headline.split()
    for cut in (words[: len(words) // 2], words[:-2]):
        short = " ".join(cut)
        v = check(
            "find_top_headline", {"headline": short, "url": harbor.url(lead.path)}, home, home
        )
        assert not v.success, (short, lead.headline, v.as_dict())
    obs, story, _ = article_obs
    answer = _truth(story, newsroom.now())
    for timeless in (story.published.strftime("%H:%M"), story.published.strftime("%H:%M:%S")):
        v = check("extract_article_metadata", {**answer, "published": timeless}, obs, obs)
        assert not v.success, (timeless, v.as_dict())
