"""The truth side of the oracle meta-evaluation (`oracle_meta_eval.py`): what the newsroom's
truth says the answer to a read-only task is, answers wrong by construction, the right answer
written differently, and whether the reference agent's answer is really right.

Everything here reads the newsroom's world directly (`Newsroom`, its sites and stories), which
the checkers never do. Not a benchmark itself (no `__main__`).
"""

from __future__ import annotations

import copy
from collections import Counter
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from newsbench_dagster.core.reading.text import parse_time
from newsbench_dagster.newsroom.site_world import SiteWorld
from newsbench_dagster.newsroom.stories import Story
from newsbench_dagster.newsroom.world import Newsroom

SAME_TIME = timedelta(seconds=60)  # "equal" for timestamps: the pages show seconds


def _url(u: object) -> str:
    return str(u or "").split("#", 1)[0].rstrip("/")


def _iso(t: datetime) -> str:
    return t.isoformat()


def _same_time(a: object, b: datetime | None) -> bool:
    if b is None:
        return a in (None, "")
    t = parse_time(a) if isinstance(a, str) else None
    return t is not None and abs(t - b) <= SAME_TIME


# -- the world's answers ----------------------------------------------------------------------
class World:
    """The truth about one instant, as the tasks ask for it."""

    def __init__(self, newsroom: Newsroom, at: datetime) -> None:
        self.newsroom, self.at = newsroom, at

    def site(self, task: dict) -> SiteWorld:
        return self.newsroom.site(task["site"])

    def story(self, site: SiteWorld, url: str) -> Story:
        story = site.story_for_path(urlsplit(url).path, self.at)
        assert story is not None, url
        return story

    def lead(self, site: SiteWorld, at: datetime | None = None) -> Story:
        return site.front_page(at or self.at).lead

    def section(self, site: SiteWorld, topic: str) -> str:
        return next(s for s in site.spec.sections if site.spec.section_label(s) == topic)

    def other_story(self, site: SiteWorld, not_k: int) -> Story:
        return next(s for s in site.stories(self.at, 6) if s.k != not_k)

    def partner(self, task: dict) -> SiteWorld:
        return self.newsroom.site(task["source"]["partner"])


def _summary(stories: list[Story]) -> str:
    return " ".join(f"{s.headline}. {s.summary}" for s in stories)


def _metadata(story: Story, at: datetime) -> dict:
    return {
        "headline": story.headline,
        "authors": list(story.authors),
        "published": _iso(story.published),
        "modified": _iso(story.modified_at(at)),
    }


def truth_and_wrong(w: World, task: dict) -> tuple[dict, list[tuple[str, dict]]] | None:
    """The truth's answer to the task and answers that are wrong by construction; None when
    the world has no answer to check (e.g. a live blog before its first entry)."""
    site, at, intent = w.site(task), w.at, task["intent"]
    if intent == "find_top_headline":
        lead = w.lead(site)
        right = {"headline": lead.headline, "url": lead.url}
        other = w.other_story(site, lead.k)
        wrong = [("another_story", {"headline": other.headline, "url": other.url})]
        earlier = w.lead(site, at - timedelta(minutes=60))
        if earlier.k != lead.k:
            wrong.append(("stale_lead", {"headline": earlier.headline, "url": earlier.url}))
        if (heading := site.deceptive_heading(at)) is not None:
            url = site.url("/sponsored/offer")
            wrong.append(("deceptive_heading", {"headline": heading, "url": url}))
        return right, wrong
    if intent == "extract_article_metadata":
        story = w.story(site, task["entry_url"])
        right = _metadata(story, at)
        other = w.other_story(site, story.k)
        wrong = [("another_story", _metadata(other, at))]
        stale = _iso(story.published - timedelta(hours=3))
        wrong.append(("stale_published", {**right, "published": stale}))
        wrong.append(("author_is_site_name", {**right, "authors": [site.spec.name]}))
        if story.modified_at(at) - story.published > timedelta(minutes=30):
            wrong.append(("stale_modified", {**right, "modified": _iso(story.published)}))
        return right, wrong
    if intent == "live_blog_latest":
        blog = site.liveblog_for_path(urlsplit(task["entry_url"]).path, at)
        entries = blog.entries(at) if blog else []
        if not entries:
            return None
        latest = entries[0]
        right = {"text": latest.text, "time": _iso(latest.published)}
        wrong = [("pinned_post", {"text": blog.pinned.text, "time": _iso(blog.pinned.published)})]
        if len(entries) > 1:
            wrong.append(
                ("stale_entry", {"text": entries[1].text, "time": _iso(entries[1].published)})
            )
        return right, wrong
    if intent == "find_corrections":
        story = w.story(site, task["entry_url"])
        corrected = story.correction_at(at)
        others = [s.correction for s in site.corrections(at) if s.k != story.k]
        if corrected:
            right = {"corrections": corrected.text, "time": _iso(corrected.at)}
            wrong = [("none_but_corrected", {"none": True})]
        else:
            right = {"none": True}
            wrong = []
        if others:
            wrong.append(("another_correction", {"corrections": others[0].text}))
        return right, wrong
    if intent == "find_author_and_time":
        story = w.story(site, task["oracle"]["target_url"])
        right = {
            "authors": list(story.authors),
            "published": _iso(story.published),
            "url": story.url,
        }
        other = w.other_story(site, story.k)
        wrong = [
            ("author_is_site_name", {**right, "authors": [site.spec.name]}),
            ("stale_published", {**right, "published": _iso(story.published - timedelta(hours=3))}),
            (
                "another_story",
                {
                    "authors": list(other.authors),
                    "published": _iso(other.published),
                    "url": other.url,
                },
            ),
        ]
        if not story.authors:  # the site's name is right here; use someone else's name
            wrong[0] = ("invented_author", {**right, "authors": ["Anna Schmidt"]})
        return right, wrong
    if intent == "identify_topic_page":
        section = w.section(site, task["inputs"]["topic"])
        right = {"url": site.url(site.section_path(section))}
        other = next(s for s in site.spec.sections if s != section)
        article = site.section_stories(section, at, 1)
        wrong = [
            ("front_page", {"url": site.url("/")}),
            ("another_section", {"url": site.url(site.section_path(other))}),
        ]
        if article:
            wrong.append(("article_on_topic", {"url": article[0].url}))
        return right, wrong
    if intent == "summarize_topic":
        section = w.section(site, task["inputs"]["topic"])
        shown = site.section_stories(section, at)
        other = next(s for s in site.spec.sections if s != section)
        partner = w.newsroom.site(next(s.key for s in w.newsroom.sites if s.key != site.key))
        right = {"summary": _summary(shown[:3])}
        elsewhere = site.section_stories(other, at)[:3]
        wrong = [
            ("summary_of_another_section", {"summary": _summary(elsewhere)}),
            (
                "summary_of_another_site",
                {"summary": _summary(partner.section_stories(partner.spec.sections[0], at)[:3])},
            ),
            ("one_story_only", {"summary": _summary(shown[:1])}),
            ("invented_sentence", {"summary": _summary(shown[:3] + elsewhere[:1])}),
        ]
        return right, wrong
    if intent == "locate_factbox":
        story = w.story(site, task["entry_url"])
        donor = next((s for s in site.stories(at, 40) if s.factbox and s.k != story.k), None)
        if story.factbox:
            facts = [list(f) for f in story.factbox]
            right = {"facts": facts}
            altered = copy.deepcopy(facts)
            altered[1][1] = altered[1][1] + "1"
            wrong = [("none_but_present", {"none": True}), ("altered_value", {"facts": altered})]
        else:
            right, wrong = {"none": True}, []
        if donor:
            wrong.append(("another_articles_facts", {"facts": [list(f) for f in donor.factbox]}))
        return right, wrong
    if intent == "compare_outlets":
        partner = w.partner(task)
        a, b = w.lead(site), w.lead(partner)
        pair = [
            {"site": site.spec.name, "headline": a.headline, "url": a.url},
            {"site": partner.spec.name, "headline": b.headline, "url": b.url},
        ]
        right = {"outlets": pair, "same_story": False}
        b_old = w.lead(partner, at - timedelta(minutes=60))
        stale = {"site": partner.spec.name, "headline": b_old.headline, "url": b_old.url}
        b_other = w.other_story(partner, b.k)
        other = {"site": partner.spec.name, "headline": b_other.headline, "url": b_other.url}
        wrong = [
            ("second_outlet_wrong_story", {"outlets": [pair[0], other]}),
            ("same_story_claimed", {**right, "same_story": True}),
            ("one_outlet_missing", {"outlets": pair[:1]}),
        ]
        if b_old.k != b.k:
            wrong.append(("second_outlet_stale", {"outlets": [pair[0], stale]}))
        return right, wrong
    raise ValueError(f"no truth for intent {intent!r}")


def _local(stamp: str, site: SiteWorld) -> str:
    """The same instant written in the site's own timezone."""
    return datetime.fromisoformat(stamp).astimezone(site.spec.tz).isoformat()


def benign_variants(w: World, task: dict, right: dict) -> list[tuple[str, dict]]:
    """The right answer written differently, as agents do: every one must still pass (the
    oracle's tolerance to harmless variation, measured as recall)."""
    site, intent = w.site(task), task["intent"]
    name = site.spec.name
    if intent == "find_top_headline":
        return [
            ("site_name_suffix", {**right, "headline": f"{right['headline']} | {name}"}),
            ("shouting_and_spaces", {**right, "headline": f"  {right['headline'].upper()} "}),
            ("tracking_query", {**right, "url": right["url"] + "?utm_source=newsbench"}),
        ]
    if intent == "extract_article_metadata":
        local = {k: _local(right[k], site) for k in ("published", "modified")}
        return [
            ("local_timezone", {**right, **local}),
            ("authors_in_one_string", {**right, "authors": " and ".join(right["authors"])}),
        ]
    if intent == "live_blog_latest":
        return [("local_timezone", {**right, "time": _local(right["time"], site)})]
    if intent == "find_corrections" and "corrections" in right:
        return [("with_a_label", {**right, "corrections": "Correction: " + right["corrections"]})]
    if intent == "find_author_and_time":
        variant = {"authors": ", ".join(right["authors"]), "published": right["published"]}
        return [
            ("no_url_and_joined_authors", variant),
            ("local_timezone", {**right, "published": _local(right["published"], site)}),
        ]
    if intent == "identify_topic_page":
        return [("no_trailing_slash", {"url": right["url"].rstrip("/")})]
    if intent == "summarize_topic":
        section = w.section(site, task["inputs"]["topic"])
        shown = site.section_stories(section, w.at)[:3]
        return [
            ("headlines_only", {"summary": " ".join(f"{s.headline}." for s in shown)}),
            ("teasers_only", {"summary": " ".join(s.summary for s in shown)}),
        ]
    if intent == "locate_factbox" and "facts" in right:
        lines = [f"{label}: {value}" for label, value in right["facts"]]
        lower = {label.lower(): value for label, value in right["facts"]}
        return [("label_value_lines", {"facts": lines}), ("lowercase_labels", {"facts": lower})]
    if intent == "compare_outlets":
        swapped = {"outlets": list(reversed(right["outlets"]))}
        return [("outlets_swapped_no_claim", swapped)]
    return []


def _time_of(value: object) -> datetime | None:
    return parse_time(value) if isinstance(value, str) else None


def reference_right(
    w: World, task: dict, answer: dict, truth: dict, fields: dict[str, Counter]
) -> bool:
    """Whether the reference agent's answer is really right, compared with the truth's answer
    field by field (for metadata, which fields too)."""
    site, intent = w.site(task), task["intent"]
    if intent == "find_top_headline":
        return _url(answer.get("url")) == _url(truth["url"]) and (
            answer.get("headline") == truth["headline"]
        )
    if intent == "extract_article_metadata":
        story = w.story(site, task["entry_url"])
        checks = {
            "headline": answer.get("headline") == story.headline,
            "authors": list(answer.get("authors") or []) == list(story.authors),
            "published": _same_time(answer.get("published"), story.published),
            "modified": _same_time(
                answer.get("modified") or answer.get("published"), story.modified_at(w.at)
            ),
        }
        for name, ok in checks.items():
            fields[name]["right" if ok else "wrong"] += 1
        return all(checks.values())
    if intent == "live_blog_latest":
        return answer.get("text") == truth["text"] and _same_time(
            answer.get("time"), _time_of(truth["time"])
        )
    if intent in ("find_corrections", "locate_factbox"):
        if truth.get("none"):
            return answer.get("none") is True
        key = "corrections" if intent == "find_corrections" else "facts"
        return answer.get(key) == truth[key]
    if intent == "find_author_and_time":
        return (
            list(answer.get("authors") or []) == truth["authors"]
            and _same_time(answer.get("published"), _time_of(truth["published"]))
            and _url(answer.get("url")) == _url(truth["url"])
        )
    if intent == "identify_topic_page":
        return _url(answer.get("url")) == _url(truth["url"])
    if intent == "summarize_topic":
        section = w.section(site, task["inputs"]["topic"])
        top = site.section_stories(section, w.at)[:3]
        return all(s.headline in str(answer.get("summary")) for s in top)
    if intent == "compare_outlets":
        given = answer.get("outlets") or []
        return (
            len(given) == 2
            and all(
                _url(g.get("url")) == _url(t["url"]) and g.get("headline") == t["headline"]
                for g, t in zip(given, truth["outlets"], strict=True)
            )
            and answer.get("same_story") is truth["same_story"]
        )
    raise ValueError(f"no reference truth for {intent!r}")
