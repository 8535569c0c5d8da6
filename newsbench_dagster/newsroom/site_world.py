"""One site as a function of time: its story stream plus the pages built from it.

SiteWorld answers what the site shows at an instant: the front page and its rotating lead,
section and author listings, search, corrections, the live blog, the template version in force,
and which URL path is which of these. Rendering them into bytes is the job of pages.py and
feeds.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import Any

from .catalog import SiteSpec
from .clock import as_utc
from .liveblogs import LiveBlog, write_liveblog
from .seeding import stable_order
from .stories import Story, StoryStream
from .text import slugify


@dataclass(frozen=True)
class FrontPage:
    lead: Story
    others: list[Story]  # the next newest stories, newest first, lead excluded
    most_read: list[Story]  # older stories, shown outside <main>


# Listing URLs, one scheme per template family (story URLs: stories.py).
_SECTION_PATHS = {
    "classic": "/news/{section}/",
    "grid": "/ressort/{section}/",
    "magazine": "/rubrique/{section}/",
}
# Only the classic family links bylines to author pages.
_AUTHOR_PATHS = {"classic": "/authors/{slug}"}

# How many stories the feeds carry; the truth API describes the same ones.
FEED_SIZE = 20
# How far back listings (section and author pages) look for matching stories.
LISTING_DEPTH = 160
# Sponsored teasers styled bigger than the lead (adversarial sites); never real stories.
DECEPTIVE_HEADLINES = (
    "SHOCKING: what {place} residents found will change everything",
    "Breaking: the one trick {place} officials don't want you to know",
    "Last chance: {place} homeowners are claiming this payout today",
)


class SiteWorld(StoryStream):
    """One site's story stream and front page, as functions of time."""

    def __init__(
        self, spec: SiteSpec, seed: int, epoch: datetime, vocab: Mapping[str, Any]
    ) -> None:
        super().__init__(spec, seed, epoch, vocab)
        self.liveblog = lru_cache(maxsize=64)(self._make_liveblog)

    def __repr__(self) -> str:
        return f"SiteWorld({self.spec.key!r}, seed={self.seed})"

    # -- pages -----------------------------------------------------------------------------------

    def front_page(self, at: datetime) -> FrontPage:
        """The homepage at `at`: a rotating lead among the 3 newest, then the next 8."""
        k = self.latest_k(at)
        window = (as_utc(at) - self.epoch) // self.rotation
        # The lead is one of the 3 newest. Its offset steps by +2 or -1 each window while the
        # newest story advances by at most 1 per window, so every window has a new lead.
        lead_k = k - (2 * window + self.draw("lead")) % 3
        others = [self.story(j) for j in range(k, k - 9, -1) if j != lead_k]
        pool = list(range(k - 9, k - 21, -1))
        picks = stable_order(len(pool), self.seed, self.key, "most-read", window)[:5]
        return FrontPage(
            lead=self.story(lead_k),
            others=others,
            most_read=[self.story(pool[i]) for i in picks],
        )

    # -- listings --------------------------------------------------------------------------------

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
        if not self.spec.adversarial or self.draw("deceptive", window) % 3:
            return None
        place = self.word("places", window)
        return DECEPTIVE_HEADLINES[
            self.draw("deceptive-text", window) % len(DECEPTIVE_HEADLINES)
        ].format(place=place)

    def _make_liveblog(self, day: date) -> LiveBlog:
        return write_liveblog(self, day)

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
