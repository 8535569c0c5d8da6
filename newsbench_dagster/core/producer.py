"""The task producer: poll a site's feeds and homepage, then turn what was read into tasks.

`poll_site` returns one row per item read (and one row per source that failed, with the
reason), so a broken feed is visible in `feed_items` instead of silently producing nothing.
`make_tasks` is a pure function of those rows: the same rows give the same task ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from newsbench_dagster.core.artifacts import ArtifactStore
from newsbench_dagster.core.feeds import parse_document
from newsbench_dagster.core.network import Fetcher
from newsbench_dagster.core.sites import Site, origin_of
from newsbench_dagster.core.tasks import DEFAULT_REWARD, task_id, task_seed, validate_task

# How a person would ask, in the site's language. Agents see the prompt; never the checks.
PROMPTS = {
    "find_top_headline": {
        "en": "What is the lead story on the front page of {name} right now? "
        "Give its headline and link.",
        "de": "Was ist gerade der Aufmacher auf der Startseite von {name}? "
        "Nenne Überschrift und Link.",
        "fr": "Quel est l'article principal à la une de {name} en ce moment ? "
        "Donne son titre et son lien.",
    },
    "extract_article_metadata": {
        "en": "For this {name} article, give the headline, the author(s), "
        "when it was published and when it was last updated.",
        "de": "Nenne für diesen Artikel von {name} Überschrift, Autor(en), "
        "Veröffentlichungszeit und letzte Aktualisierung.",
        "fr": "Pour cet article de {name}, donne le titre, le ou les auteurs, "
        "la date de publication et celle de la dernière mise à jour.",
    },
}

CHECKS = {
    "find_top_headline": {
        "structural": ["lead_heading_in_main"],
        "metadata": ["headline_fuzzy>=0.8|entities>=0.5"],
    },
    "extract_article_metadata": {
        "metadata": ["headline_fuzzy>=0.8", "byline_plausible"],
        "time": ["published_within_15m", "modified_within_15m"],
    },
}


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


def _status(res) -> str:
    if res.error and res.error.startswith("refused"):
        return "refused"
    return str(res.status) if res.status is not None else "error"


def poll_site(
    site: Site, fetcher: Fetcher, store: ArtifactStore | None, day: date
) -> list[PollRow]:
    sources = [(f.url, f.kind) for f in site.feeds] + [(site.home, "homepage")]
    rows: list[PollRow] = []
    for url, kind in sources:
        res = fetcher.fetch(url)
        fetched_at = datetime.now(UTC)
        raw_uri = None
        if res.content and store is not None:
            raw_uri = store.put(f"feeds/{site.key}/{day}/{kind}-{len(rows)}.raw", res.content)
        problem = None
        if res.error:
            problem = res.error
        elif not res.ok:
            problem = f"HTTP {res.status}"
        parsed = (
            None
            if problem
            else parse_document(res.content, res.final_url or url, kind, res.headers)
        )
        if parsed is not None and parsed.error:
            problem = parsed.error
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
        for i, item in enumerate(parsed.items):
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
                )
            )
    return rows


def _base_task(site: Site, day: date, intent: str, entry_url: str, source: dict) -> dict[str, Any]:
    tid = task_id(site.key, day, intent, entry_url)
    lang = site.language if site.language in PROMPTS[intent] else "en"
    return {
        "id": tid,
        "site": site.key,
        "day": day.isoformat(),
        "entry_url": entry_url,
        "intent": intent,
        "inputs": {"prompt": PROMPTS[intent][lang].format(name=site.name)},
        "constraints": {
            "max_steps": 15,
            "max_tokens": 4000,
            "max_seconds": 60,
            "geo": site.geo,
            "device_profile": "desktop",
            "network": "wifi",
            "allow_paywalled": site.policy.allow_paywalled,
            "respect_robots": True,
            "language": site.language,
        },
        "checks": CHECKS[intent],
        "reward": dict(DEFAULT_REWARD),
        "allowed_origins": site.allowed_origins,
        "suite": "live",
        "seed": task_seed(tid),
        "source": source,
    }


def make_tasks(
    site: Site, day: date, rows: list[PollRow], articles_per_site: int = 3
) -> list[dict]:
    """Tasks for one site and day from its poll rows: one top-headline task per readable
    homepage, one metadata task for each of the newest article items on the site's origins."""
    tasks: list[dict] = []
    if any(r.kind == "homepage" and r.item_url for r in rows):
        tasks.append(
            _base_task(
                site,
                day,
                "find_top_headline",
                site.home,
                {"kind": "homepage", "source_url": site.home},
            )
        )
    articles: dict[str, PollRow] = {}
    for r in rows:
        if r.kind == "homepage" or not r.item_url:
            continue
        if origin_of(r.item_url) not in site.allowed_origins or r.item_url in articles:
            continue
        articles[r.item_url] = r
    newest = sorted(
        articles.values(),
        key=lambda r: (r.published or datetime.min.replace(tzinfo=UTC), r.item_url),
        reverse=True,
    )[:articles_per_site]
    for r in newest:
        task = _base_task(
            site,
            day,
            "extract_article_metadata",
            r.item_url,
            {"kind": r.kind, "source_url": r.source_url, "item_url": r.item_url, "title": r.title},
        )
        task["inputs"]["fields"] = ["headline", "authors", "published", "modified"]
        tasks.append(task)
    return [validate_task(t) for t in tasks]
