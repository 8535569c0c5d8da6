"""Live blogs: each site-local day one blog that gains entries during the site's live hours.

Like stories, a day's blog is a pure function of (seed, site, day); what a reader sees at an
instant is the entries published by then.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from .clock import as_utc
from .stories import StoryStream
from .text import capitalise, slugify


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


def write_liveblog(stream: StoryStream, day: date) -> LiveBlog:
    """The live blog of one site-local day, with all of that day's entries."""
    tz = stream.spec.tz
    start_h, end_h = stream.spec.liveblog_hours
    midnight = datetime(day.year, day.month, day.day, tzinfo=tz)
    started = as_utc(midnight + timedelta(hours=start_h))
    ends = as_utc(midnight + timedelta(hours=end_h))
    n = (day - stream.epoch.date()).days
    topic = stream.word("objects", 7 * n + 3)
    title = stream.labels["live_title"].format(topic=topic)
    slug = slugify(topic, 40)
    path = f"/live/{day.isoformat()}/{slug}"
    sentences = stream.vocab["sentences"]
    fill = {
        "subject": stream.word("subjects", n),
        "other": stream.word("subjects", n + 5),
        "object": topic,
        "place": stream.word("places", n),
        "n": 12 + stream.draw(day, "live-n") % 400,
    }

    def sentence(i: int) -> str:
        return capitalise(sentences[stream.draw(day, "live-s", i) % len(sentences)].format(**fill))

    pinned = LiveEntry(
        f"pinned-{day.isoformat()}",
        started,
        f"{stream.labels['live_pinned']}: {sentence(0)} {sentence(1)} {sentence(2)}",
        pinned=True,
    )
    entries: list[LiveEntry] = []
    t = started
    i = 0
    while True:
        t = t + timedelta(
            minutes=6 + stream.draw(day, "live-gap", i) % 9, seconds=stream.draw(day, i) % 60
        )
        if t >= ends:
            break
        place = stream.word("places", n + i + 1)
        text = stream.labels["live_entry"].format(
            place=place, sentence=sentence(10 + 3 * i), sentence2=sentence(11 + 3 * i)
        )
        if len(text) <= 140:  # an update says something: at least two full sentences
            text += " " + sentence(12 + 3 * i)
        entries.append(LiveEntry(f"e{day.strftime('%Y%m%d')}-{i:03d}", t, text))
        i += 1
    return LiveBlog(
        day, slug, title, topic, path, stream.url(path), started, ends, pinned, tuple(entries)
    )
