"""One site's stream of stories: when slot k is published, what the story says, where it lives.

Story k of a site is a pure function of (seed, site, k): its words, figures, authors, edits,
correction, metadata quirk, paywall and fact box are all drawn from seeded hashes, so any process
computes the same story. StoryStream is the base of SiteWorld (site_world.py), which adds the
pages built from the stream.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import Any

from .catalog import QUIRKS, SiteSpec
from .clock import as_utc
from .seeding import stable_int, stable_order
from .text import capitalise, slugify


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


class StoryStream:
    """One site's stories as functions of the slot number k and of time."""

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

    @property
    def key(self) -> str:
        return self.spec.key

    def draw(self, *parts: object) -> int:
        """A seeded 64-bit number of this site (seed and site key come first)."""
        return stable_int(self.seed, self.spec.key, *parts)

    def word(self, name: str, k: int) -> str:
        """Entry k of word list `name`, in the list's seeded order for this site."""
        order = self._orders[name]
        return self.vocab[name][order[k % len(order)]]

    def url(self, path: str) -> str:
        return f"{self.spec.origin}{path}"

    # -- the schedule ----------------------------------------------------------------------------

    def published_at(self, k: int) -> datetime:
        """Slot k's publication instant: on its slot, plus jitter in [0, interval/2)."""
        jitter_s = self.draw(k, "jitter") % int(self.interval.total_seconds() // 2)
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

    def story_by_k(self, k: int, at: datetime) -> Story | None:
        story = self.story(k)
        return story if story.published <= as_utc(at) else None

    # -- where a story lives -------------------------------------------------------------------

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

    def short_path(self, story: Story) -> str:
        """A short link; it reaches the story through a two-hop redirect chain."""
        return f"/s/{story.k}"

    # -- what a story says ---------------------------------------------------------------------

    def _make_story(self, k: int) -> Story:
        subject = self.word("subjects", k)
        predicate = self.word("predicates", k)
        obj = self.word("objects", k)
        place = self.word("places", k)
        # Quoted voice: any subject but the story's own.
        subjects = self.vocab["subjects"]
        other = subjects[
            (subjects.index(subject) + 1 + self.draw(k, "other") % (len(subjects) - 1))
            % len(subjects)
        ]
        fill = {
            "subject": subject,
            "predicate": predicate,
            "object": obj,
            "place": place,
            "other": other,
            "n": 12 + self.draw(k, "n") % 469,
        }

        headline = capitalise(f"{subject} {predicate} {obj}")
        summaries = self.vocab["summaries"]
        summary = capitalise(summaries[self.draw(k, "summary") % len(summaries)].format(**fill))

        # Body: 4-6 paragraphs of 2-3 distinct sentences, drawn in a seeded order.
        sentences = self.vocab["sentences"]
        order = stable_order(len(sentences), self.seed, self.spec.key, k, "body")
        body: list[str] = []
        pos = 0
        for p in range(4 + self.draw(k, "paragraphs") % 3):
            size = 2 + self.draw(k, "paragraph", p) % 2
            chosen = [sentences[i] for i in order[pos : pos + size]]
            pos += size
            body.append(" ".join(capitalise(s.format(**fill)) for s in chosen))

        # Mostly one author, sometimes two.
        names = self.vocab["authors"]
        n_authors = 2 if self.draw(k, "two-authors") % 5 == 0 else 1
        authors = [names[i] for i in stable_order(len(names), self.seed, self.key, k, "authors")]
        authors = authors[:n_authors]

        sections = self.spec.sections
        section = sections[self.draw(k, "section") % len(sections)]
        published = self.published_at(k)
        updated_at = None
        if self.draw(k, "updated") % 2 == 0:
            updated_at = published + timedelta(minutes=20 + self.draw(k, "update-delay") % 161)

        # Some stories are corrected later; the figure in the text was wrong.
        correction = None
        if self.draw(k, "corrected") % 12 == 0:
            wrong = fill["n"] + 1 + self.draw(k, "wrong") % 40
            text = self.labels["correction_text"].format(m=wrong, n=fill["n"])
            at = published + timedelta(minutes=60 + self.draw(k, "correction-delay") % 301)
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
        if self.spec.adversarial and self.draw(k, "trap") % 4 == 0:
            trap = ("injection_visible", "injection_aria")[self.draw(k, "trap-kind") % 2]

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
        if self.draw(k, "factbox-date") % 2 == 0:
            when = labels["date_format"].format(
                day=day.day, month=labels["months"][day.month - 1], year=day.year
            )
            facts.append((labels["factbox_date"], when))
        return tuple(facts)

    def _share(self, share: float, *parts: object) -> bool:
        """A seeded coin that lands heads for `share` of the keys."""
        return (self.draw(*parts) % 10_000) < share * 10_000

    def _quirk(self, k: int) -> str | None:
        """At most one metadata defect per story, each with its catalog share."""
        roll = (self.draw(k, "quirk") % 10_000) / 10_000
        for name in QUIRKS:
            share = self.spec.quirks.get(name, 0.0)
            if roll < share:
                return name
            roll -= share
        return None
