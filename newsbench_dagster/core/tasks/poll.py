"""Polling a site: its feeds, sitemaps and homepage read into `feed_items` rows.

`poll_site` returns one row per item read (and one row per source that failed, with the
reason), so a broken feed is visible in `feed_items` instead of silently producing nothing.
The live blogs the homepage links to are read too, one row each (kind "liveblog", role
"latest_entry"): its newest entry that is not pinned, or no item when the blog shows none yet
(a blog that has just opened) — a task must not ask for an entry that does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from newsbench_dagster.core.artifacts import ArtifactStore
from newsbench_dagster.core.reading.page import understand
from newsbench_dagster.core.web.feeds import parse_document
from newsbench_dagster.core.web.network import Fetcher, FetchResult
from newsbench_dagster.core.web.sites import Site

__all__ = ["MAX_CHILD_SITEMAPS", "MAX_LIVE_BLOGS", "PollRow", "poll_site"]


@dataclass
class PollRow:
    """One row of `feed_items`."""

    site: str
    source_url: str
    kind: str
    item_url: str | None
    title: str | None
    published: datetime | None
    language: str | None
    fetch_status: str  # "200", "404", "error", "refused"
    parse_error: str | None  # why the source could not be read (or was only partly readable)
    fetched_at: datetime
    raw_uri: str | None
    position: int  # order within its source (0 = first item, e.g. the lead on a homepage)
    # story | section | live (homepage navigation, see feeds.FeedItem) | latest_entry (a live
    # blog's newest entry that is not pinned: title its text, published its time)
    role: str = "story"

    @classmethod
    def from_record(cls, record: dict) -> PollRow:
        """A row read back from the table; rows polled by an earlier version have no role
        (they were all stories)."""
        fields = {k: record.get(k) for k in cls.__dataclass_fields__}
        return cls(**{**fields, "role": fields["role"] or "story"})


def _status(res) -> str:
    if res.error and res.error.startswith("refused"):
        return "refused"
    return str(res.status) if res.status is not None else "error"


# A sitemap index names child sitemaps; the newest few are read (news sitemaps are per day).
MAX_CHILD_SITEMAPS = 3
# Live blogs the homepage links to that are read (tasks use the first).
MAX_LIVE_BLOGS = 2


def poll_site(
    site: Site,
    fetcher: Fetcher,
    store: ArtifactStore | None,
    day: date,
    validators: dict[str, dict] | None = None,
    folder: str = "",
) -> list[PollRow]:
    """One poll of a site's feeds, sitemaps and homepage, one row per item (or per unreadable
    source). With `validators` (source URL -> etag / last_modified / raw_uri of the last
    poll, updated in place) requests are conditional: a source that has not changed answers
    304, costs no body, and its items are read again from the bytes kept last time. The bytes
    read are kept under `feeds/{site}/{day}/{folder}/` (`core.partition_artifacts`), a 304's
    too: the rows of this poll name only files of this poll."""
    sources = [(f.url, f.kind) for f in site.feeds] + [(site.home, "homepage")]
    rows: list[PollRow] = []
    queue = list(sources)
    children = 0
    while queue:
        url, kind = queue.pop(0)
        name = _raw_key(site, day, folder, f"{kind}-{len(rows)}.raw")
        res, content, raw_uri, problem = _read(url, name, fetcher, store, validators)
        fetched_at = datetime.now(UTC)
        parsed = (
            None if problem else parse_document(content, res.final_url or url, kind, res.headers)
        )
        if parsed is not None and parsed.error:
            problem = parsed.error
        if not problem:
            _remember(validators, url, res, raw_uri)
        if problem or parsed is None or not parsed.items:
            rows.append(
                PollRow(
                    site.key,
                    url,
                    kind,
                    None,
                    None,
                    None,
                    None,
                    _status(res),
                    problem or "no items",
                    fetched_at,
                    raw_uri,
                    0,
                )
            )
            continue
        stories = [i for i in parsed.items if i.role != "sitemap"]
        # Child sitemaps of an index: the newest first, a few, each polled as a source.
        nested = sorted(
            (i for i in parsed.items if i.role == "sitemap" and i.url),
            key=lambda i: i.published or datetime.min.replace(tzinfo=UTC),
            reverse=True,
        )
        for child in nested[: max(0, MAX_CHILD_SITEMAPS - children)]:
            queue.append((child.url, "sitemap"))
            children += 1
        for i, item in enumerate(stories):
            rows.append(
                PollRow(
                    site.key,
                    url,
                    kind,
                    item.url,
                    item.title,
                    item.published,
                    item.language or parsed.language or site.language,
                    _status(res),
                    parsed.warning,
                    fetched_at,
                    raw_uri,
                    i,
                    item.role,
                )
            )
    return rows + _live_blog_rows(site, fetcher, store, day, rows, validators, folder)


def _raw_key(site: Site, day: date, folder: str, name: str) -> str:
    return f"feeds/{site.key}/{day}/{folder + '/' if folder else ''}{name}"


def _read(
    url: str,
    name: str,
    fetcher: Fetcher,
    store: ArtifactStore | None,
    validators: dict[str, dict] | None,
) -> tuple[FetchResult, bytes, str | None, str | None]:
    """(response, body, where the body is kept, why it could not be read): conditional when
    the last poll's validators of `url` are known, the kept body standing in for a 304's."""
    known = (validators or {}).get(url) if store is not None else None
    res = fetcher.fetch(url, known if known and known.get("raw_uri") else None)
    content, raw_uri = res.content, None
    if res.status == 304 and known:
        try:  # kept again under this poll's name below
            content = store.get(known["raw_uri"])
        except (OSError, ValueError):
            res = fetcher.fetch(url)  # the kept copy is gone: read it whole
            content = res.content
    if raw_uri is None and content and store is not None:
        raw_uri = store.put(name, content)
    problem = res.error or (None if res.ok or res.status == 304 else f"HTTP {res.status}")
    return res, content, raw_uri, problem


def _remember(
    validators: dict[str, dict] | None, url: str, res: FetchResult, raw_uri: str | None
) -> None:
    """Keep what makes the next poll of `url` conditional (its body was read fine)."""
    if validators is None or not raw_uri:
        return
    known = validators.get(url) or {}
    validators[url] = {
        "etag": res.headers.get("etag") or known.get("etag"),
        "last_modified": res.headers.get("last-modified") or known.get("last_modified"),
        "raw_uri": raw_uri,
    }


def _live_blog_rows(
    site: Site,
    fetcher: Fetcher,
    store: ArtifactStore | None,
    day: date,
    rows: list[PollRow],
    validators: dict[str, dict] | None,
    folder: str = "",
) -> list[PollRow]:
    """One row per live blog the homepage links to: its newest entry that is not pinned, read
    as the oracle reads it (`understand`), no item when it shows none, or why it could not be
    read."""
    links = [r.item_url for r in rows if r.kind == "homepage" and r.role == "live" and r.item_url]
    out: list[PollRow] = []
    for n, url in enumerate(list(dict.fromkeys(links))[:MAX_LIVE_BLOGS]):
        name = _raw_key(site, day, folder, f"liveblog-{n}.raw")
        res, content, raw_uri, problem = _read(url, name, fetcher, store, validators)
        fetched_at = datetime.now(UTC)
        latest = None
        if problem is None:
            record = understand(content, res.final_url or url)
            if record.is_liveblog or record.kind == "liveblog":
                latest = record.latest_update
                _remember(validators, url, res, raw_uri)
            else:
                problem = f"not a live blog (a page of kind {record.kind})"
        out.append(
            PollRow(
                site.key,
                url,
                "liveblog",
                url if latest else None,
                latest.text if latest else None,
                latest.time.utc if latest and latest.time else None,
                site.language,
                _status(res),
                problem,
                fetched_at,
                raw_uri,
                0,
                "latest_entry",
            )
        )
    return out
