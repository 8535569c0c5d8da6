"""What `understand()` returns: the page record and the values it holds (headline and author
candidates, timestamps, live-blog updates, corrections, fact-box entries, story teasers), each
with the signal it came from."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from newsbench_dagster.core.json_ready import json_ready


@dataclass(frozen=True)
class Candidate:
    value: str  # cleaned (whitespace collapsed, site name stripped where that applies)
    source: str  # the signal: "jsonld", "microdata", "og:title", "meta:author", "byline", ...
    raw: str = ""  # as found, when cleaning changed it


@dataclass(frozen=True)
class Timestamp:
    utc: datetime  # aware, UTC
    raw: str  # as written on the page
    offset: str | None  # "+01:00" as written; None when no zone was given (read as UTC)
    source: str

    def iso(self) -> str:
        return self.utc.isoformat()


@dataclass(frozen=True)
class LiveUpdate:
    id: str | None
    time: Timestamp | None
    text: str
    pinned: bool
    source: str  # "jsonld" (liveBlogUpdate) or "page" (a visible entry)


@dataclass(frozen=True)
class Correction:
    text: str
    time: Timestamp | None


@dataclass(frozen=True)
class Fact:
    label: str  # whitespace normalised, trailing colon stripped
    value: str


@dataclass(frozen=True)
class Teaser:
    headline: str
    url: str  # absolute, resolved against the page's URL (or its <base>)
    summary: str | None  # a nearby paragraph, when the teaser shows one


@dataclass(frozen=True)
class PageRecord:
    url: str | None
    is_html: bool
    encoding: str | None
    headline: str | None = None
    headline_candidates: tuple[Candidate, ...] = ()
    authors: tuple[str, ...] = ()  # people only
    author_candidates: tuple[Candidate, ...] = ()
    publisher_authors: tuple[str, ...] = ()  # JSON-LD authors that are organisations
    publisher: str | None = None
    published: Timestamp | None = None
    modified: Timestamp | None = None
    canonical: str | None = None
    amp: str | None = None
    language: str | None = None  # BCP-47
    is_liveblog: bool = False
    live_updates: tuple[LiveUpdate, ...] = ()  # JSON-LD liveBlogUpdate
    live_entries: tuple[LiveUpdate, ...] = ()  # entries visible on the page
    latest_update: LiveUpdate | None = None  # newest non-pinned, by time
    corrections: tuple[Correction, ...] = ()
    # One of page_kind.KINDS: from JSON-LD types, og:type, the URL path ("/" is home), else
    # structure.
    kind: str = "other"
    main_heading: str | None = None  # the h1 (or aria-level 1 heading) under main
    factbox: tuple[Fact, ...] = ()  # the fact box's entries in page order; () when none
    factbox_title: str | None = None  # its heading or caption ("Key facts")
    listing: tuple[Teaser, ...] = ()  # story teasers under main, in page order
    sources: dict[str, str] = field(default_factory=dict)  # field -> signal it came from
    # field -> the chosen value's share of the weight of every signal that named one (0..1)
    confidence: dict[str, float] = field(default_factory=dict)
    conflicts: dict[str, list[str]] = field(default_factory=dict)  # field -> strong dissenters
    # field -> the readings it is ambiguous between, the chosen one first (evidence.choose:
    # a rival with a strong source's support and at least half the winner's)
    ambiguous: dict[str, list[Any]] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return json_ready(asdict(self))
