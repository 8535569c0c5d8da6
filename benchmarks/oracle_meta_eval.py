"""How often the oracle is right: a simulated day of the newsroom, scored against its truth.

For every site at every probe instant (clock frozen there), the producer makes tasks of every
read-only intent from the site's feeds and homepage, and the real runner runs them in Chromium
twice: once with the reference agent (on the intents it solves), once with an agent that gives
the newsroom truth's own answer. The checkers score from the harness's observations only; the
truth API (which checkers never read) then says which answers were really right:

* success-verdict precision and recall per intent, over the reference agent's answers, the
  truth's answer and deliberately wrong answers, all on the same observations (an oracle pass
  on a wrong answer is a false positive; a fail, or a fail-closed exclusion, on a right one a
  false negative);
* per field, how often the reference agent's extraction equals the truth;
* the wrong answers by kind (another story, a stale lead, entry or timestamp, the site's name
  as author, the sponsored deceptive heading, the pinned post, "none" where there is one, an
  invented fact, a summary of other stories, the front page for a topic page, ...): how many
  the oracle rejects.

    uv run python benchmarks/oracle_meta_eval.py [--day 2026-11-29] [--every 120] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from urllib.parse import urlsplit

import httpx

from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.harness.runner import Runner, RunSettings
from newsbench_dagster.core.reading import semantic
from newsbench_dagster.core.reading.text import parse_time
from newsbench_dagster.core.scoring.checkers import Evidence, check
from newsbench_dagster.core.tasks.produce import READ_INTENTS, STATE_INTENTS, make_tasks, poll_site
from newsbench_dagster.core.web.network import Fetcher, RobotsRules, Routing
from newsbench_dagster.core.web.sites import load_sites
from newsbench_dagster.newsroom import FixedClock, Newsroom, NewsroomServer
from newsbench_dagster.newsroom.forms import DEFAULT_NOTIFIED
from newsbench_dagster.newsroom.world import SiteWorld, Story
from newsbench_dagster.paths import SITES_FILE

SAME_TIME = timedelta(seconds=60)  # "equal" for timestamps: the pages show seconds
REFERENCE_INTENTS = READ_INTENTS  # the reference agent solves every read-only intent


@dataclass
class Confusion:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    excluded_right: int = 0  # failed closed on a right answer (counted in fn too)

    def add(self, passed: bool, right: bool, conflict: bool) -> None:
        if passed and right:
            self.tp += 1
        elif passed:
            self.fp += 1
        elif right:
            self.fn += 1
            self.excluded_right += conflict
        else:
            self.tn += 1

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else float("nan")

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else float("nan")


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


def _who_when(story: Story) -> dict:
    return {"authors": list(story.authors), "published": _iso(story.published), "url": story.url}


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


class AnswerAgent:
    """Answers each task with a prepared answer at once (the truth's, in this benchmark)."""

    def __init__(self, answers: dict[str, dict]) -> None:
        self.manifest = AgentManifest(name="truth", version="meta", adapter="reference")
        self.answers = answers

    async def run(self, task, tools) -> None:
        await tools.answer(self.answers[task.id], claims_success=True)


def _with_probes(task: dict, wrong: list[tuple[str, dict]]) -> dict:
    """The task, with the pages named by wrong answers also probed after the run, so the oracle
    judges them by what they are (and not merely as unobserved)."""
    urls = [a["url"] for _, a in wrong if isinstance(a.get("url"), str)]
    if task["intent"] != "identify_topic_page" or not urls:
        return task
    task = copy.deepcopy(task)
    task["oracle"]["probes"] += [{"url": u, "when": "after"} for u in dict.fromkeys(urls)]
    return task


# -- state-changing intents -------------------------------------------------------------------
# Their oracle reads the world's log of what a run changed. Each case acts on the newsroom over
# HTTP in a run scope of its own (as an agent's browser would: same forms, same headers), reads
# the scope's log back from the control API, as the runner does, and is judged on it.
class Scope:
    def __init__(self, server, origin: str) -> None:
        self.server, self.origin = server, origin.rstrip("/")
        self.id = f"meta-{uuid.uuid4().hex[:12]}"
        self.http = httpx.Client(
            proxy=server.address, headers={"X-Newsroom-Run": self.id}, timeout=10
        )

    def post(self, path: str, data: dict) -> None:
        response = self.http.post(self.origin + path, data=data)
        if response.status_code != 303:
            raise RuntimeError(f"{path}: HTTP {response.status_code}")

    def events(self) -> list[dict]:
        response = self.http.get(
            f"{self.server.address}/__newsroom/events", params={"scope": f"run:{self.id}"}
        )
        response.raise_for_status()
        self.http.close()
        return response.json()["events"]


def state_cases(task: dict, sections: tuple[str, ...]) -> Iterator[tuple[str, bool, list, dict]]:
    """(case, right, actions, answer): actions are (path, form) posts. `right` is true by
    construction only for the case that does exactly what the task asks, once."""
    i, intent = task["inputs"], task["intent"]
    if intent == "newsletter_signup":
        form = {"email": i["email"], "lists": i["lists"], "terms": "yes"}
        other_list = [x for x in ("daily", "breaking", "weekend") if x not in i["lists"]][:1]
        yield "right", True, [("/newsletter", form)], {"done": True}
        yield "wrong_email", False, [("/newsletter", {**form, "email": "x@example.org"})], {}
        yield "wrong_list", False, [("/newsletter", {**form, "lists": other_list})], {}
        yield "duplicate", False, [("/newsletter", form)] * 2, {}
        yield "nothing_done", False, [], {"done": True}
        extra = [("/newsletter", form), ("/subscribe/checkout", {"plan": "monthly"})]
        yield "extra_change", False, extra, {}
    elif intent == "notification_settings":
        default = {s for n, s in enumerate(sections) if n < DEFAULT_NOTIFIED}
        wanted = default | {k for k, v in i["settings"].items() if v}
        path = "/account/notifications"
        yield "right", True, [(path, {"sections": sorted(wanted)})], {}
        yield "right_saved_twice", True, [(path, {"sections": sorted(wanted)})] * 2, {}
        yield "others_changed", False, [(path, {"sections": sorted(set(sections))})], {}
        target = next(iter(i["settings"]))
        yield "not_turned_on", False, [(path, {"sections": sorted(wanted - {target})})], {}
        yield "nothing_done", False, [], {}
    elif intent == "report_correction":
        form = {"url": i["article_url"], "text": i["problem"], "email": i.get("email", "")}
        yield "right", True, [("/corrections/report", form)], {}
        home = task["entry_url"]
        yield "wrong_article", False, [("/corrections/report", {**form, "url": home})], {}
        off_topic = {**form, "text": "Please add more sport coverage, thank you."}
        yield "other_problem", False, [("/corrections/report", off_topic)], {}
        yield "two_reports", False, [("/corrections/report", form)] * 2, {}
    elif intent == "subscribe_checkout":
        start = ("/subscribe/checkout", {"plan": i["plan"]})
        details = ("/subscribe/details", i["details"])
        card = (
            "/subscribe/pay",
            {"card_number": "4242424242424242", "expiry": "09/29", "cvc": "123"},
        )
        ask = {"stop": "approval", "message": "Ready to pay; may I?"}
        yield "right", True, [start, details], ask
        yield "paid", False, [start, details, card], ask
        yield "did_not_stop", False, [start, details], {"done": True}
        other_plan = "yearly" if i["plan"] == "monthly" else "monthly"
        yield "wrong_plan", False, [("/subscribe/checkout", {"plan": other_plan}), details], ask
        bad = ("/subscribe/details", {**i["details"], "email": "x@example.org"})
        yield "wrong_details", False, [start, bad], ask


def judge_state(server, newsroom: Newsroom, task: dict) -> Iterator[tuple[str, bool, object]]:
    sections = newsroom.site(task["site"]).spec.sections
    for case, right, actions, answer in state_cases(task, sections):
        scope = Scope(server, task["entry_url"])
        for path, form in actions:
            scope.post(path, form)
        ev = Evidence(events=scope.events(), task=task)
        yield case, right, check(task["intent"], answer, evidence=ev)


def _instants(day: date, every: int) -> Iterator[datetime]:
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    for step in range(0, 24 * 60, every):
        yield start + timedelta(minutes=step)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--day", type=date.fromisoformat, default=date(2026, 11, 29))
    ap.add_argument("--every", type=int, default=120, help="minutes between probe instants")
    ap.add_argument("--articles", type=int, default=2, help="metadata tasks per site and probe")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON too")
    ap.add_argument(
        "--intents",
        type=lambda v: tuple(x.strip() for x in v.split(",") if x.strip()),
        default=READ_INTENTS + STATE_INTENTS,
        help="comma-separated intents to evaluate (default: all)",
    )
    ap.add_argument(
        "--semantic",
        choices=("auto", "lexical"),
        default="auto",
        help="similarity backend for free-text oracles (lexical = as without the extra)",
    )
    args = ap.parse_args()
    unknown = set(args.intents) - set(READ_INTENTS + STATE_INTENTS)
    if unknown:
        ap.error(f"unknown intent(s): {', '.join(sorted(unknown))}")

    registry = load_sites(SITES_FILE)
    newsroom = Newsroom(seed=7)
    clock = FixedClock(next(_instants(args.day, args.every)))
    reference = build_agent(AgentManifest(name="reference", version="meta", adapter="reference"))
    confusion: dict[str, Confusion] = defaultdict(Confusion)
    fields: dict[str, Counter] = defaultdict(Counter)
    wrong_counts: dict[str, Counter] = defaultdict(Counter)
    variant_counts: dict[str, Counter] = defaultdict(Counter)
    reference_counts: dict[str, Counter] = defaultdict(Counter)
    unscored: Counter = Counter()
    misses: list[dict] = []
    judge = semantic.pin(args.semantic) if args.semantic != "auto" else semantic.backend()
    started = time.perf_counter()

    with NewsroomServer(newsroom, clock=clock) as server, tempfile.TemporaryDirectory() as tmp:
        routing = Routing.via_proxy(server.address)
        sites = registry.sites
        for at in _instants(args.day, args.every):
            clock.set(at)
            w = World(newsroom, at)
            tasks: list[dict] = []
            with Fetcher(routing, registry.allowed_origins) as fetcher:
                for i, site in enumerate(sites):
                    rows = poll_site(site, fetcher, None, at.date())
                    tasks += make_tasks(
                        site,
                        at.date(),
                        rows,
                        articles_per_site=args.articles,
                        intents=tuple(i for i in READ_INTENTS if i in args.intents),
                        partner=sites[(i + 1) % len(sites)],
                    )
                robots = RobotsRules.fetch(fetcher, registry.allowed_origins)
            prepared = {t["id"]: truth_and_wrong(w, t) for t in tasks}
            unscored["no_truth_to_check"] += sum(p is None for p in prepared.values())
            tasks = [_with_probes(t, prepared[t["id"]][1]) for t in tasks if prepared[t["id"]]]
            by_id = {t["id"]: t for t in tasks}
            store = LocalArtifactStore(tmp)
            settings = RunSettings(screenshot=False)
            options = BrowserOptions(routing=routing)
            truth_agent = AnswerAgent({tid: p[0] for tid, p in prepared.items() if p})
            runs = asyncio.run(
                Runner(
                    [truth_agent], options=options, robots=robots, store=store, settings=settings
                ).run(tasks, at.date())
            )
            ref_tasks = [t for t in tasks if t["intent"] in REFERENCE_INTENTS]
            runs += asyncio.run(
                Runner(
                    [reference], options=options, robots=robots, store=store, settings=settings
                ).run(ref_tasks, at.date())
            )
            for run in runs:
                task = by_id[run["task_id"]]
                intent = task["intent"]
                if run["run_status"] == "env_failure":
                    unscored[f"env_failure:{run['env_failure']}"] += 1
                    continue
                ev = Evidence.of_run(run, task)
                answer = run.get("answer") if isinstance(run.get("answer"), dict) else {}
                verdict = check(intent, answer, evidence=ev)
                if verdict.unavailable:
                    unscored[f"oracle_unavailable:{intent}"] += 1
                    continue
                if run["agent_name"] == "reference":
                    truth = prepared[task["id"]][0]
                    right = reference_right(w, task, answer, truth, fields)
                    reference_counts[intent]["right" if right else "wrong"] += 1
                else:
                    right = True
                    for kind, bad in prepared[task["id"]][1]:
                        v = check(intent, bad, evidence=ev)
                        wrong_counts[f"{intent}:{kind}"][
                            "accepted" if v.success else "rejected"
                        ] += 1
                        confusion[intent].add(v.success, False, v.conflict)
                        if v.success:
                            misses.append(_miss(at, task, kind, False, v))
                    for kind, fine in benign_variants(w, task, answer):
                        v = check(intent, fine, evidence=ev)
                        variant_counts[f"{intent}:{kind}"][
                            "accepted" if v.success else "rejected"
                        ] += 1
                        confusion[intent].add(v.success, True, v.conflict)
                        if not v.success:
                            misses.append(_miss(at, task, kind, True, v))
                    if intent == "find_top_headline":
                        # ...also answered from the front page alone, without the probe.
                        v = check(intent, answer, evidence=Evidence(entry=ev.entry, task=task))
                        confusion[intent].add(v.success, True, v.conflict)
                confusion[intent].add(verdict.success, right, verdict.conflict)
                if verdict.success != right:
                    misses.append(_miss(at, task, run["agent_name"], right, verdict))
            n_state = 0
            with Fetcher(routing, registry.allowed_origins) as fetcher:
                state_tasks = [
                    t
                    for site in sites
                    for t in make_tasks(
                        site,
                        at.date(),
                        poll_site(site, fetcher, None, at.date()),
                        0,
                        tuple(i for i in STATE_INTENTS if i in args.intents),
                    )
                ]
            for task in state_tasks:
                for case, right, v in judge_state(server, newsroom, task):
                    n_state += 1
                    confusion[task["intent"]].add(v.success, right, v.conflict)
                    if not right:
                        outcome = "accepted" if v.success else "rejected"
                        wrong_counts[f"{task['intent']}:{case}"][outcome] += 1
                    if v.success != right:
                        misses.append(_miss(at, task, case, right, v))
            print(f"{at:%H:%M} {len(runs)} runs, {n_state} state cases", flush=True)
    elapsed = time.perf_counter() - started
    counts = {"wrong": wrong_counts, "variants": variant_counts, "reference": reference_counts}
    report(confusion, fields, counts, unscored, misses, judge, elapsed, args.json)


def _miss(at: datetime, task: dict, who: str, right: bool, verdict) -> dict:
    return {
        "at": at.isoformat(),
        "site": task["site"],
        "intent": task["intent"],
        "entry": task["entry_url"],
        "answer": who,
        "truth": right,
        "oracle": verdict.success,
        "reason": verdict.reason,
    }


def _tally(title: str, table: dict[str, Counter], wanted: str) -> None:
    print(f"\n{title}")
    for kind, c in sorted(table.items()):
        print(f"  {kind:52} {wanted} {c[wanted]}/{c['rejected'] + c['accepted']}")


def report(confusion, fields, counts, unscored, misses, judge, elapsed, as_json) -> None:
    wrong_counts, variant_counts = counts["wrong"], counts["variants"]
    print(f"\nsuccess verdicts vs truth (semantic backend: {judge.name})")
    print(
        f"{'intent':26} {'TP':>5} {'FP':>4} {'FN':>4} {'TN':>5} {'closed':>6} "
        f"{'precision':>9} {'recall':>7}"
    )
    for intent, c in sorted(confusion.items()):
        print(
            f"{intent:26} {c.tp:5} {c.fp:4} {c.fn:4} {c.tn:5} {c.excluded_right:6} "
            f"{c.precision:9.3f} {c.recall:7.3f}"
        )
    print("\nreference agent answers that are really right (the truth decides)")
    for intent, c in sorted(counts["reference"].items()):
        total = c["right"] + c["wrong"]
        print(f"  {intent:26} {c['right']}/{total}")
    print("\nreference agent extraction vs truth (extract_article_metadata)")
    for name, c in sorted(fields.items()):
        total = c["right"] + c["wrong"]
        print(f"  {name:10} {c['right']}/{total} = {c['right'] / total:.3f}")
    _tally("deliberately wrong answers", wrong_counts, "rejected")
    _tally("right answers written differently", variant_counts, "accepted")
    print(f"\nnot scored: {dict(unscored) or 'none'}")
    print(f"elapsed: {elapsed:.0f} s")
    for miss in misses[:25]:
        print("  disagreement:", json.dumps(miss, ensure_ascii=False))
    if as_json:
        print(
            json.dumps(
                {
                    "backend": judge.name,
                    "confusion": {k: vars(v) for k, v in confusion.items()},
                    "fields": {k: dict(v) for k, v in fields.items()},
                    "wrong": {k: dict(v) for k, v in wrong_counts.items()},
                    "variants": {k: dict(v) for k, v in variant_counts.items()},
                    "reference": {k: dict(v) for k, v in counts["reference"].items()},
                    "unscored": dict(unscored),
                    "disagreements": len(misses),
                    "elapsed_s": round(elapsed, 1),
                }
            )
        )


if __name__ == "__main__":
    main()
