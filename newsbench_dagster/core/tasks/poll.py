"""Polling a site: its feeds, sitemaps and homepage read into `feed_items` rows.

`poll_site` returns one row per item read (and one row per source that failed, with the
reason), so a broken feed is visible in `feed_items` instead of silently producing nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from newsbench_dagster.core.artifacts import ArtifactStore
from newsbench_dagster.core.web.feeds import parse_document
from newsbench_dagster.core.web.network import Fetcher
from newsbench_dagster.core.web.sites import Site

__all__ = ["MAX_CHILD_SITEMAPS", "PollRow", "poll_site"]


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
    role: str = "story"  # story | section | live (homepage navigation, see feeds.FeedItem)

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


def poll_site(
    site: Site,
    fetcher: Fetcher,
    store: ArtifactStore | None,
    day: date,
    validators: dict[str, dict] | None = None,
) -> list[PollRow]:
    """One poll of a site's feeds, sitemaps and homepage, one row per item (or per unreadable
    source). With `validators` (source URL -> etag / last_modified / raw_uri of the last
    poll, updated in place) requests are conditional: a source that has not changed answers
    304, costs no body, and its items are read again from the bytes kept last time."""
    sources = [(f.url, f.kind) for f in site.feeds] + [(site.home, "homepage")]
    rows: list[PollRow] = []
    queue = list(sources)
    children = 0
    while queue:
        url, kind = queue.pop(0)
        known = (validators or {}).get(url) if store is not None else None
        res = fetcher.fetch(url, known if known and known.get("raw_uri") else None)
        fetched_at = datetime.now(UTC)
        content, raw_uri = res.content, None
        if res.status == 304 and known:
            try:
                content, raw_uri = store.get(known["raw_uri"]), known["raw_uri"]
            except (OSError, ValueError):
                res = fetcher.fetch(url)  # the kept copy is gone: read it whole
                content = res.content
        if raw_uri is None and content and store is not None:
            raw_uri = store.put(f"feeds/{site.key}/{day}/{kind}-{len(rows)}.raw", content)
        problem = None
        if res.error:
            problem = res.error
        elif not (res.ok or res.status == 304):
            problem = f"HTTP {res.status}"
        parsed = (
            None if problem else parse_document(content, res.final_url or url, kind, res.headers)
        )
        if parsed is not None and parsed.error:
            problem = parsed.error
        if validators is not None and not problem and raw_uri:
            validators[url] = {
                "etag": res.headers.get("etag") or (known or {}).get("etag"),
                "last_modified": res.headers.get("last-modified")
                or (known or {}).get("last_modified"),
                "raw_uri": raw_uri,
            }
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
    return rows
