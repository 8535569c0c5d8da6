"""The task producer: turn a site's poll rows (see `core.tasks.poll`) into tasks.

`make_tasks` is a pure function of those rows: the same rows give the same task ids.
`todays_tasks` polls the sites and makes their tasks, for callers outside the pipeline.

A day's tasks are few picks per intent (suite "live": what the daily evaluation runs). The
release gate needs far more questions than that (12 looks of 100 held-out tasks), so with
`reserve` the producer also makes every other answerable task of the same rows: each article,
story and section once per intent that can ask about it, as suite "held-out" (never run daily,
drawn from by the gate's looks).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from newsbench_dagster.core.tasks.contract import validate_task
from newsbench_dagster.core.tasks.intents import ALL_INTENTS, ARTICLES_PER_SITE, BUILDERS, Context
from newsbench_dagster.core.tasks.poll import PollRow, poll_site
from newsbench_dagster.core.web.network import Fetcher
from newsbench_dagster.core.web.sites import Site, SiteRegistry

__all__ = ["DAILY", "RESERVE", "make_tasks", "todays_tasks"]

# The suite of the tasks a day's evaluation runs, and of the reserve only the gate draws from.
DAILY, RESERVE = "live", "held-out"


def make_tasks(
    site: Site,
    day: date,
    rows: list[PollRow],
    articles_per_site: int = ARTICLES_PER_SITE,
    intents: tuple[str, ...] = ALL_INTENTS,
    partner: Site | None = None,
    reserve: bool = False,
) -> list[dict]:
    """Tasks for one site and day from its poll rows (a pure function of them): every builder
    of the intents asked for (all by default; see `core.tasks.intents`), in step order; with
    `reserve`, then the held-out reserve (see the module's docstring).

    * find_top_headline: one per readable homepage;
    * extract_article_metadata: one per newest article item (up to `articles_per_site`);
    * find_corrections, locate_factbox: one article each (an older one for corrections, which
      come hours after publication; "none" is a valid answer to both);
    * find_author_and_time: a headline from the feed, asked from the front page;
    * identify_topic_page, summarize_topic: a section from the homepage's navigation;
    * live_blog_latest: the live blog the homepage links to;
    * compare_outlets: this site's and `partner`'s front pages;
    * the state intents, from the front page, then the tasks whose right ending is a stop.
    """
    want = set(intents)
    ctx = Context(site, day, rows, articles_per_site, partner)
    tasks = [t for _, intent, build in BUILDERS if intent in want for t in build(ctx)]
    if reserve:
        daily = {t["id"] for t in tasks}
        ctx = Context(site, day, rows, articles_per_site, partner, reserve=True)
        more = [t for _, intent, build in BUILDERS if intent in want for t in build(ctx)]
        tasks += [{**t, "suite": RESERVE} for t in more if t["id"] not in daily]
    return [validate_task(t) for t in tasks]


def todays_tasks(
    registry: SiteRegistry,
    fetcher: Fetcher,
    day: date,
    sites: Iterable[str] | None = None,
    intents: tuple[str, ...] = ALL_INTENTS,
    articles_per_site: int = ARTICLES_PER_SITE,
    reserve: bool = False,
) -> list[dict]:
    """Every task the sites' feeds give for `day` right now (each site paired with the next
    one for comparisons), for callers outside the pipeline: `agents try`, a release
    evaluation with no recent `news_tasks` to draw from (with the `reserve`), the
    benchmarks."""
    out: list[dict] = []
    for key in sites or registry.keys:
        spec = registry.get(key)
        rows = poll_site(spec, fetcher, None, day)
        partner = registry.partner_of(key)
        out += make_tasks(spec, day, rows, articles_per_site, tuple(intents), partner, reserve)
    return out
