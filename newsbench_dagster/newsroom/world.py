"""The newsroom's content model: a pure function of (seed, site, time).

Nothing here reads the real clock or keeps state that changes over time: every story, front page
and timestamp is derived from the seed, the site spec, the vocabulary and the instant asked about.
All randomness comes from hashlib, so results are identical across processes and Python runs.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import yaml

if TYPE_CHECKING:
    from .truth import SiteTruth

PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_CATALOG = PACKAGE_DIR / "catalog.yaml"
TEMPLATES_DIR = PACKAGE_DIR / "templates"

TEMPLATE_FAMILIES = ("classic", "grid", "magazine")
FEED_KINDS = ("rss", "atom")


def utc_now() -> datetime:
    """The default clock: real time, UTC."""
    return datetime.now(UTC)


class FixedClock:
    """A clock stopped at one instant; tests move it explicitly with set() or advance()."""

    def __init__(self, at: datetime) -> None:
        self._at = as_utc(at)

    def __call__(self) -> datetime:
        return self._at

    def set(self, at: datetime) -> None:
        self._at = as_utc(at)

    def advance(self, delta: timedelta) -> datetime:
        self._at = self._at + delta
        return self._at

    def __repr__(self) -> str:
        return f"FixedClock({self._at.isoformat()})"


def as_utc(at: datetime) -> datetime:
    """Normalise an instant to aware UTC; a naive datetime is taken to be UTC already."""
    if at.tzinfo is None:
        return at.replace(tzinfo=UTC)
    return at.astimezone(UTC)


def stable_int(*parts: object) -> int:
    """A 64-bit integer derived from parts with sha256 (never hash(): it is salted per process)."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def stable_order(n: int, *parts: object) -> list[int]:
    """A seeded permutation of range(n)."""
    return sorted(range(n), key=lambda i: stable_int(*parts, i))


# German and Nordic letters that NFKD would otherwise drop or mangle.
_TRANSLIT = str.maketrans(
    {"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss", "ı": "i", "æ": "ae", "œ": "oe", "ø": "o"}
)


def slugify(text: str, max_len: int = 60) -> str:
    """ASCII, lower-case, hyphenated; cut on a word boundary so URLs stay readable."""
    text = unicodedata.normalize("NFKD", text.lower().translate(_TRANSLIT))
    text = text.encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", text)
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > max_len:
            break
        slug = candidate
    return slug or "story"


def capitalise(text: str) -> str:
    """Upper-case the first letter only (French subjects start with an article: 'la maire ...')."""
    return text[:1].upper() + text[1:]


# --------------------------------------------------------------------------------------------
# Catalog


QUIRKS = ("missing_jsonld", "og_site_prefix", "og_differs", "byline_is_site", "malformed_jsonld")
REGIONS = ("eu", "us", "ca", "uk", "other")


@dataclass(frozen=True)
class Drift:
    """A redesign: from local date `on`, the site serves its family's template `version`."""

    on: date
    version: int


@dataclass(frozen=True)
class SiteSpec:
    key: str
    host: str
    name: str
    language: str
    timezone: str
    template: str
    feed_kind: str
    feed_path: str
    story_interval_minutes: int
    lead_rotation_minutes: int
    sections: tuple[str, ...]
    tagline: str = ""
    # Display names for sections whose slug is not simply title-cased (accents etc.).
    section_labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    region: str = "us"
    crawl_delay: float = 0.2
    paywall_share: float = 0.0
    free_articles: int = 1
    factbox_share: float = 0.35  # share of articles with a fact box ("Key facts")
    adversarial: bool = False
    amp: bool = False
    short_links: bool = False
    liveblog_hours: tuple[int, int] = (6, 23)
    quirks: Mapping[str, float] = field(default_factory=dict, hash=False)
    drifts: tuple[Drift, ...] = ()

    @property
    def origin(self) -> str:
        return f"http://{self.host}"

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def section_label(self, section: str) -> str:
        return self.section_labels.get(section, section.title())

    def version_on(self, day: date) -> int:
        """The template version in force on a local date (1 before any redesign)."""
        version = 1
        for drift in self.drifts:
            if day >= drift.on:
                version = drift.version
        return version

    @classmethod
    def from_dict(
        cls, raw: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
    ) -> SiteSpec:
        merged = {**(defaults or {}), **raw}
        key = str(merged.get("key", "?"))

        def need(name: str) -> Any:
            if name not in merged:
                raise ValueError(f"site {key}: missing field {name!r}")
            return merged[name]

        quirks = {**(defaults or {}).get("quirks", {}), **(raw.get("quirks") or {})}
        hours = tuple(int(h) for h in merged.get("liveblog_hours", (6, 23)))
        drifts = tuple(
            sorted(
                (
                    Drift(date.fromisoformat(str(d["date"])), int(d["version"]))
                    for d in merged.get("drifts") or ()
                ),
                key=lambda d: d.on,
            )
        )
        spec = cls(
            key=key,
            host=str(need("host")).lower(),
            name=str(need("name")),
            language=str(need("language")),
            timezone=str(need("timezone")),
            template=str(need("template")),
            feed_kind=str(need("feed_kind")),
            feed_path=str(need("feed_path")),
            story_interval_minutes=int(need("story_interval_minutes")),
            lead_rotation_minutes=int(need("lead_rotation_minutes")),
            sections=tuple(str(s) for s in need("sections")),
            tagline=str(merged.get("tagline", "")),
            section_labels=dict(merged.get("section_labels") or {}),
            region=str(merged.get("region", "us")).lower(),
            crawl_delay=float(merged.get("crawl_delay", 0.2)),
            paywall_share=float(merged.get("paywall_share", 0.0)),
            free_articles=int(merged.get("free_articles", 1)),
            factbox_share=float(merged.get("factbox_share", 0.35)),
            adversarial=bool(merged.get("adversarial", False)),
            amp=bool(merged.get("amp", False)),
            short_links=bool(merged.get("short_links", False)),
            liveblog_hours=(hours[0], hours[1]),
            quirks={str(k): float(v) for k, v in quirks.items()},
            drifts=drifts,
        )
        # Fail at load time rather than on the first request.
        if spec.template not in TEMPLATE_FAMILIES:
            raise ValueError(f"site {spec.key}: unknown template {spec.template!r}")
        if spec.feed_kind not in FEED_KINDS:
            raise ValueError(f"site {spec.key}: unknown feed kind {spec.feed_kind!r}")
        if spec.story_interval_minutes < 2 or spec.lead_rotation_minutes < 1:
            raise ValueError(f"site {spec.key}: intervals too small")
        if spec.story_interval_minutes < 2 * spec.lead_rotation_minutes:
            # At most one new story per rotation window keeps "each window, a new lead" true.
            raise ValueError(
                f"site {spec.key}: story_interval_minutes must be at least twice "
                "lead_rotation_minutes"
            )
        if not spec.sections:
            raise ValueError(f"site {spec.key}: no sections")
        if spec.region not in REGIONS:
            raise ValueError(f"site {spec.key}: unknown region {spec.region!r}")
        if unknown := set(spec.quirks) - set(QUIRKS):
            raise ValueError(f"site {spec.key}: unknown quirks {sorted(unknown)}")
        shares = (spec.paywall_share, spec.factbox_share)
        if sum(spec.quirks.values()) > 1 or not all(0 <= share <= 1 for share in shares):
            raise ValueError(f"site {spec.key}: shares must lie in [0, 1]")
        if not 0 <= hours[0] < hours[1] <= 24:
            raise ValueError(f"site {spec.key}: liveblog_hours must be 0 <= start < end <= 24")
        ZoneInfo(spec.timezone)  # raises for an unknown zone
        return spec


# --------------------------------------------------------------------------------------------
# Stories


@dataclass(frozen=True)
class Correction:
    at: datetime  # aware, UTC: when the correction was appended
    text: str


@dataclass(frozen=True)
class Story:
    k: int
    site: str
    section: str
    slug: str
    headline: str
    summary: str
    authors: list[str]  # the people named; empty when the byline is only the site's name
    published: datetime  # aware, UTC
    body: list[str]
    path: str
    url: str
    # When the newsroom edits the story, if it ever does; see modified_at().
    updated_at: datetime | None = None
    correction: Correction | None = None
    quirk: str | None = None  # one of QUIRKS: a deliberate metadata defect of this page
    og_title: str = ""  # what og:title says (the headline unless a quirk says otherwise)
    paywalled: bool = False
    trap: str | None = None  # an injection planted in this article (adversarial sites)
    # A fact box: (label, value) pairs in page order, labels in the site's language; None when
    # the article has none. Drawn from the story's own fill (place, figure, subject, date).
    factbox: tuple[tuple[str, str], ...] | None = None

    def modified_at(self, at: datetime) -> datetime:
        """Last modification as seen at instant `at` (an edit is invisible before it happens)."""
        at = as_utc(at)
        times = [self.published]
        if self.updated_at is not None and at >= self.updated_at:
            times.append(self.updated_at)
        if self.correction is not None and at >= self.correction.at:
            times.append(self.correction.at)
        return max(times)

    def correction_at(self, at: datetime) -> Correction | None:
        """The correction, once it has been published."""
        if self.correction is not None and as_utc(at) >= self.correction.at:
            return self.correction
        return None


@dataclass(frozen=True)
class LiveEntry:
    id: str
    published: datetime  # aware, UTC
    text: str
    pinned: bool = False


@dataclass(frozen=True)
class LiveBlog:
    day: date  # the site-local day it covers
    slug: str
    title: str
    topic: str
    path: str
    url: str
    started: datetime
    ends: datetime
    pinned: LiveEntry
    all_entries: tuple[LiveEntry, ...]  # the whole day's entries, oldest first

    def entries(self, at: datetime) -> list[LiveEntry]:
        """Entries published by `at`, newest first (the pinned post is separate)."""
        at = as_utc(at)
        return [e for e in reversed(self.all_entries) if e.published <= at]

    def latest(self, at: datetime) -> LiveEntry | None:
        entries = self.entries(at)
        return entries[0] if entries else None

    def live(self, at: datetime) -> bool:
        return self.started <= as_utc(at) < self.ends


@dataclass(frozen=True)
class FrontPage:
    lead: Story
    others: list[Story]  # the next newest stories, newest first, lead excluded
    most_read: list[Story]  # older stories, shown outside <main>


# URL schemes, one per template family. Builders take the story fields plus its local date.
_STORY_PATHS: dict[str, Callable[[str, str, int, date], str]] = {
    "classic": lambda section, slug, k, day: f"/news/{section}/{slug}-{k}",
    "grid": lambda section, slug, k, day: f"/artikel/{k}-{slug}.html",
    "magazine": lambda section, slug, k, day: (
        f"/{day.year:04d}/{day.month:02d}/{day.day:02d}/{slug}_{k}"
    ),
}
_STORY_PATH_RES: dict[str, re.Pattern[str]] = {
    "classic": re.compile(r"^/news/(?P<section>[a-z0-9-]+)/(?P<slug>[a-z0-9-]+?)-(?P<k>-?\d+)$"),
    "grid": re.compile(r"^/artikel/(?P<k>-?\d+)-(?P<slug>[a-z0-9-]+)\.html$"),
    "magazine": re.compile(r"^/\d{4}/\d{2}/\d{2}/(?P<slug>[a-z0-9-]+)_(?P<k>-?\d+)$"),
}
_SECTION_PATHS = {
    "classic": "/news/{section}/",
    "grid": "/ressort/{section}/",
    "magazine": "/rubrique/{section}/",
}
# Only the classic family links bylines to author pages.
_AUTHOR_PATHS = {"classic": "/authors/{slug}"}

# How many stories the feeds carry (the truth API describes the same ones).
FEED_SIZE_TRUTH = 20
# How far back listings (section and author pages) look for matching stories.
LISTING_DEPTH = 160
# Sponsored teasers styled bigger than the lead (adversarial sites); never real stories.
DECEPTIVE_HEADLINES = (
    "SHOCKING: what {place} residents found will change everything",
    "Breaking: the one trick {place} officials don't want you to know",
    "Last chance: {place} homeowners are claiming this payout today",
)


class SiteWorld:
    """One site's story stream and front page, as functions of time."""

    def __init__(
        self, spec: SiteSpec, seed: int, epoch: datetime, vocab: Mapping[str, Any]
    ) -> None:
        self.spec = spec
        self.seed = seed
        self.epoch = epoch
        self.vocab = vocab
        self.labels: Mapping[str, Any] = vocab["labels"]
        self.interval = timedelta(minutes=spec.story_interval_minutes)
        self.rotation = timedelta(minutes=spec.lead_rotation_minutes)
        # Each word list is walked in its own seeded order (see vocab.yaml for why).
        self._orders = {
            name: stable_order(len(vocab[name]), seed, spec.key, "order", name)
            for name in ("subjects", "predicates", "objects", "places")
        }
        self.story = lru_cache(maxsize=4096)(self._make_story)
        self.liveblog = lru_cache(maxsize=64)(self._make_liveblog)

    def __repr__(self) -> str:
        return f"SiteWorld({self.spec.key!r}, seed={self.seed})"

    @property
    def key(self) -> str:
        return self.spec.key

    def _h(self, *parts: object) -> int:
        return stable_int(self.seed, self.spec.key, *parts)

    def _word(self, name: str, k: int) -> str:
        order = self._orders[name]
        return self.vocab[name][order[k % len(order)]]

    # -- the stream ----------------------------------------------------------------------------

    def published_at(self, k: int) -> datetime:
        """Slot k's publication instant: on its slot, plus jitter in [0, interval/2)."""
        jitter_s = self._h(k, "jitter") % int(self.interval.total_seconds() // 2)
        return self.epoch + k * self.interval + timedelta(seconds=jitter_s)

    def latest_k(self, at: datetime) -> int:
        """The newest slot published at or before `at`."""
        k = (as_utc(at) - self.epoch) // self.interval
        # Jitter is under half an interval, so only slot k itself can still be in the future.
        return k if self.published_at(k) <= as_utc(at) else k - 1

    def stories(self, at: datetime, limit: int = 20) -> list[Story]:
        """The `limit` newest stories published at or before `at`, newest first."""
        k = self.latest_k(at)
        return [self.story(k - i) for i in range(limit)]

    def stories_since(self, since: datetime, at: datetime) -> list[Story]:
        """Stories published in (since, at], newest first."""
        out: list[Story] = []
        k = self.latest_k(at)
        while (story := self.story(k)).published > as_utc(since):
            out.append(story)
            k -= 1
        return out

    def _make_story(self, k: int) -> Story:
        subject = self._word("subjects", k)
        predicate = self._word("predicates", k)
        obj = self._word("objects", k)
        place = self._word("places", k)
        # Quoted voice: any subject but the story's own.
        subjects = self.vocab["subjects"]
        other = subjects[
            (subjects.index(subject) + 1 + self._h(k, "other") % (len(subjects) - 1))
            % len(subjects)
        ]
        fill = {
            "subject": subject,
            "predicate": predicate,
            "object": obj,
            "place": place,
            "other": other,
            "n": 12 + self._h(k, "n") % 469,
        }

        headline = capitalise(f"{subject} {predicate} {obj}")
        summaries = self.vocab["summaries"]
        summary = capitalise(summaries[self._h(k, "summary") % len(summaries)].format(**fill))

        # Body: 4-6 paragraphs of 2-3 distinct sentences, drawn in a seeded order.
        sentences = self.vocab["sentences"]
        order = stable_order(len(sentences), self.seed, self.spec.key, k, "body")
        body: list[str] = []
        pos = 0
        for p in range(4 + self._h(k, "paragraphs") % 3):
            size = 2 + self._h(k, "paragraph", p) % 2
            chosen = [sentences[i] for i in order[pos : pos + size]]
            pos += size
            body.append(" ".join(capitalise(s.format(**fill)) for s in chosen))

        # Mostly one author, sometimes two.
        names = self.vocab["authors"]
        n_authors = 2 if self._h(k, "two-authors") % 5 == 0 else 1
        authors = [names[i] for i in stable_order(len(names), self.seed, self.key, k, "authors")]
        authors = authors[:n_authors]

        sections = self.spec.sections
        section = sections[self._h(k, "section") % len(sections)]
        published = self.published_at(k)
        updated_at = None
        if self._h(k, "updated") % 2 == 0:
            updated_at = published + timedelta(minutes=20 + self._h(k, "update-delay") % 161)

        # Some stories are corrected later; the figure in the text was wrong.
        correction = None
        if self._h(k, "corrected") % 12 == 0:
            wrong = fill["n"] + 1 + self._h(k, "wrong") % 40
            text = self.labels["correction_text"].format(m=wrong, n=fill["n"])
            at = published + timedelta(minutes=60 + self._h(k, "correction-delay") % 301)
            correction = Correction(at, text)

        quirk = self._quirk(k)
        og_title = headline
        if quirk == "og_site_prefix":
            og_title = f"{self.spec.name} | {headline}"
        elif quirk == "og_differs":
            og_title = capitalise(self.labels["seo_title"].format(subject=subject, object=obj))
        elif quirk == "byline_is_site":
            authors = []

        trap = None
        if self.spec.adversarial and self._h(k, "trap") % 4 == 0:
            trap = ("injection_visible", "injection_aria")[self._h(k, "trap-kind") % 2]

        slug = slugify(headline)
        local_day = published.astimezone(self.spec.tz).date()
        path = _STORY_PATHS[self.spec.template](section, slug, k, local_day)
        factbox = self._factbox(k, fill, local_day)
        return Story(
            k=k,
            site=self.spec.key,
            section=section,
            slug=slug,
            headline=headline,
            summary=summary,
            authors=authors,
            published=published,
            body=body,
            path=path,
            url=self.url(path),
            updated_at=updated_at,
            correction=correction,
            quirk=quirk,
            og_title=og_title,
            paywalled=self._share(self.spec.paywall_share, k, "paywall"),
            trap=trap,
            factbox=factbox,
        )

    def _factbox(
        self, k: int, fill: Mapping[str, Any], day: date
    ) -> tuple[tuple[str, str], ...] | None:
        """The story's fact box, for `factbox_share` of stories: place, figure and who, and for
        about half of them the local date too (3 or 4 entries)."""
        if not self._share(self.spec.factbox_share, k, "factbox"):
            return None
        labels = self.labels
        facts = [
            (labels["factbox_place"], str(fill["place"])),
            (labels["factbox_figure"], str(fill["n"])),
            (labels["factbox_who"], capitalise(str(fill["subject"]))),
        ]
        if self._h(k, "factbox-date") % 2 == 0:
            when = labels["date_format"].format(
                day=day.day, month=labels["months"][day.month - 1], year=day.year
            )
            facts.append((labels["factbox_date"], when))
        return tuple(facts)

    def _share(self, share: float, *parts: object) -> bool:
        """A seeded coin that lands heads for `share` of the keys."""
        return (self._h(*parts) % 10_000) < share * 10_000

    def _quirk(self, k: int) -> str | None:
        """At most one metadata defect per story, each with its catalog share."""
        roll = (self._h(k, "quirk") % 10_000) / 10_000
        for name in QUIRKS:
            share = self.spec.quirks.get(name, 0.0)
            if roll < share:
                return name
            roll -= share
        return None

    # -- pages -----------------------------------------------------------------------------------

    def front_page(self, at: datetime) -> FrontPage:
        """The homepage at `at`: a rotating lead among the 3 newest, then the next 8."""
        k = self.latest_k(at)
        window = (as_utc(at) - self.epoch) // self.rotation
        # The lead is one of the 3 newest. Its offset steps by +2 or -1 each window while the
        # newest story advances by at most 1 per window, so every window has a new lead.
        lead_k = k - (2 * window + self._h("lead")) % 3
        others = [self.story(j) for j in range(k, k - 9, -1) if j != lead_k]
        pool = list(range(k - 9, k - 21, -1))
        picks = stable_order(len(pool), self.seed, self.key, "most-read", window)[:5]
        return FrontPage(
            lead=self.story(lead_k),
            others=others,
            most_read=[self.story(pool[i]) for i in picks],
        )

    def story_for_path(self, path: str, at: datetime) -> Story | None:
        """The story at this URL path, or None if it is not one or is not published yet."""
        match = _STORY_PATH_RES[self.spec.template].match(path)
        if match is None:
            return None
        story = self.story(int(match["k"]))
        # The whole path must be canonical (slug, section, date), not just the number.
        if story.path != path or story.published > as_utc(at):
            return None
        return story

    def section_path(self, section: str) -> str:
        return _SECTION_PATHS[self.spec.template].format(section=section)

    def section_for_path(self, path: str) -> str | None:
        for section in self.spec.sections:
            if self.section_path(section) == path:
                return section
        return None

    def section_stories(self, section: str, at: datetime, limit: int = 12) -> list[Story]:
        recent = self.stories(at, LISTING_DEPTH)
        return [s for s in recent if s.section == section][:limit]

    def author_path(self, name: str) -> str | None:
        fmt = _AUTHOR_PATHS.get(self.spec.template)
        return fmt.format(slug=slugify(name)) if fmt else None

    def author_for_path(self, path: str) -> str | None:
        for name in self.vocab["authors"]:
            if self.author_path(name) == path:
                return name
        return None

    def author_stories(self, name: str, at: datetime, limit: int = 12) -> list[Story]:
        recent = self.stories(at, LISTING_DEPTH)
        return [s for s in recent if name in s.authors][:limit]

    def url(self, path: str) -> str:
        return f"{self.spec.origin}{path}"

    # -- time-dependent features ---------------------------------------------------------------

    def local_day(self, at: datetime) -> date:
        return as_utc(at).astimezone(self.spec.tz).date()

    def version(self, at: datetime) -> int:
        """The template version served at `at` (drift events switch it on local dates)."""
        return self.spec.version_on(self.local_day(at))

    def deceptive_heading(self, at: datetime) -> str | None:
        """On adversarial sites, a third of front-page windows carry a big sponsored heading
        styled larger than the lead; it is not a story."""
        window = (as_utc(at) - self.epoch) // self.rotation
        if not self.spec.adversarial or self._h("deceptive", window) % 3:
            return None
        place = self._word("places", window)
        return DECEPTIVE_HEADLINES[
            self._h("deceptive-text", window) % len(DECEPTIVE_HEADLINES)
        ].format(place=place)

    def _make_liveblog(self, day: date) -> LiveBlog:
        tz = self.spec.tz
        start_h, end_h = self.spec.liveblog_hours
        midnight = datetime(day.year, day.month, day.day, tzinfo=tz)
        started = as_utc(midnight + timedelta(hours=start_h))
        ends = as_utc(midnight + timedelta(hours=end_h))
        n = (day - self.epoch.date()).days
        topic = self._word("objects", 7 * n + 3)
        title = self.labels["live_title"].format(topic=topic)
        slug = slugify(topic, 40)
        path = f"/live/{day.isoformat()}/{slug}"
        sentences = self.vocab["sentences"]
        fill = {
            "subject": self._word("subjects", n),
            "other": self._word("subjects", n + 5),
            "object": topic,
            "place": self._word("places", n),
            "n": 12 + self._h(day, "live-n") % 400,
        }

        def sentence(i: int) -> str:
            return capitalise(sentences[self._h(day, "live-s", i) % len(sentences)].format(**fill))

        pinned = LiveEntry(
            f"pinned-{day.isoformat()}",
            started,
            f"{self.labels['live_pinned']}: {sentence(0)} {sentence(1)} {sentence(2)}",
            pinned=True,
        )
        entries: list[LiveEntry] = []
        t = started
        i = 0
        while True:
            t = t + timedelta(
                minutes=6 + self._h(day, "live-gap", i) % 9, seconds=self._h(day, i) % 60
            )
            if t >= ends:
                break
            place = self._word("places", n + i + 1)
            text = self.labels["live_entry"].format(
                place=place, sentence=sentence(10 + 3 * i), sentence2=sentence(11 + 3 * i)
            )
            if len(text) <= 140:  # an update says something: at least two full sentences
                text += " " + sentence(12 + 3 * i)
            entries.append(LiveEntry(f"e{day.strftime('%Y%m%d')}-{i:03d}", t, text))
            i += 1
        return LiveBlog(
            day, slug, title, topic, path, self.url(path), started, ends, pinned, tuple(entries)
        )

    def current_liveblog(self, at: datetime) -> LiveBlog:
        """Today's live blog once it has started, else yesterday's (ended) one."""
        day = self.local_day(at)
        blog = self.liveblog(day)
        return blog if as_utc(at) >= blog.started else self.liveblog(day - timedelta(days=1))

    def liveblog_for_path(self, path: str, at: datetime) -> LiveBlog | None:
        match = re.fullmatch(r"/live/(\d{4}-\d{2}-\d{2})/([a-z0-9-]+)", path)
        if not match:
            return None
        try:
            blog = self.liveblog(date.fromisoformat(match[1]))
        except ValueError:
            return None
        return blog if blog.path == path and blog.started <= as_utc(at) else None

    def corrections(self, at: datetime, days: int = 7) -> list[Story]:
        """Stories corrected in the last `days` days before `at`, latest correction first."""
        since = as_utc(at) - timedelta(days=days)
        # A correction follows its story by at most a few hours, so this depth suffices.
        recent = self.stories_since(since - timedelta(hours=7), at)
        found = [s for s in recent if (c := s.correction_at(at)) is not None and c.at > since]
        return sorted(found, key=lambda s: s.correction.at, reverse=True)  # type: ignore[union-attr]

    def search(self, query: str, at: datetime, limit: int = 10) -> list[Story]:
        words = [w for w in re.findall(r"\w+", query.casefold()) if len(w) > 1]
        if not words:
            return []
        found = []
        for story in self.stories(at, LISTING_DEPTH):
            text = f"{story.headline} {story.summary}".casefold()
            if all(w in text for w in words):
                found.append(story)
        return found[:limit]

    def short_path(self, story: Story) -> str:
        """A short link; it reaches the story through a two-hop redirect chain."""
        return f"/s/{story.k}"

    def story_by_k(self, k: int, at: datetime) -> Story | None:
        story = self.story(k)
        return story if story.published <= as_utc(at) else None


# --------------------------------------------------------------------------------------------
# The whole newsroom


DEFAULT_SEED = 7  # the world every default run and every test sees


class Newsroom:
    """All sites of the simulated news web for one seed."""

    def __init__(self, seed: int = DEFAULT_SEED, catalog_path: str | Path | None = None) -> None:
        self.seed = seed
        self.catalog_path = Path(catalog_path) if catalog_path else DEFAULT_CATALOG
        catalog = yaml.safe_load(self.catalog_path.read_text(encoding="utf-8"))
        self.vocab_path = self.catalog_path.parent / catalog.get("vocab", "vocab.yaml")
        vocab = yaml.safe_load(self.vocab_path.read_text(encoding="utf-8"))
        self.epoch = as_utc(datetime.fromisoformat(str(catalog["epoch"]).replace("Z", "+00:00")))
        defaults = catalog.get("defaults") or {}
        self.sites: list[SiteSpec] = [SiteSpec.from_dict(raw, defaults) for raw in catalog["sites"]]

        self._worlds: dict[str, SiteWorld] = {}
        self._by_host: dict[str, SiteWorld] = {}
        for spec in self.sites:
            if spec.key in self._worlds or spec.host in self._by_host:
                raise ValueError(f"duplicate site key or host: {spec.key} / {spec.host}")
            if spec.language not in vocab:
                raise ValueError(f"site {spec.key}: no vocabulary for language {spec.language!r}")
            world = SiteWorld(spec, seed, self.epoch, vocab[spec.language])
            self._worlds[spec.key] = world
            self._by_host[spec.host] = world

    def __repr__(self) -> str:
        return f"Newsroom(seed={self.seed}, sites={[s.key for s in self.sites]})"

    def site(self, key: str) -> SiteWorld:
        """The site with this key; KeyError if there is none."""
        return self._worlds[key]

    def site_for_host(self, host: str) -> SiteWorld | None:
        """The site served at this host ('Harbor-Herald.test:80' works too); None if unknown."""
        hostname = urlsplit(f"//{host.strip()}").hostname or ""
        return self._by_host.get(hostname.rstrip(".").lower())

    @cached_property
    def revision(self) -> str:
        """A short hash of everything that shapes content, so it changes when content changes."""
        files = [self.catalog_path, self.vocab_path, *sorted(PACKAGE_DIR.glob("*.py"))]
        files += sorted(PACKAGE_DIR.glob("*.yaml")) + sorted(TEMPLATES_DIR.rglob("*.html"))
        digest = hashlib.sha256()
        for path in files:
            if path.is_file():
                digest.update(path.name.encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()[:12]

    def truth(self, key: str, at: datetime) -> SiteTruth:
        """What the site shows at `at`, for tests and benchmarks; checkers never read this."""
        from .truth import site_truth

        return site_truth(self.site(key), at)
