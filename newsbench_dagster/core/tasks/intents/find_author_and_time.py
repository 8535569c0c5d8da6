"""find_author_and_time: a headline from the feed, asked from the front page (the agent must
find the article; the oracle probes it)."""

from __future__ import annotations

from newsbench_dagster.core.tasks.intents.base import Context, Intent, base_task, candidates, source
from newsbench_dagster.core.tasks.poll import PollRow

INTENT = Intent(
    name="find_author_and_time",
    kind="read",
    rank=5,
    prompts={
        "en": 'Who wrote the article "{headline}" in {name}, and when was it published?',
        "de": "Wer hat den Artikel „{headline}“ bei {name} geschrieben, und wann erschien er?",
        "fr": "Qui a écrit l'article « {headline} » de {name}, et quand a-t-il été publié ?",
    },
    answer_format={
        "authors": "list of author names",
        "published": "publication time, ISO 8601 with offset",
        "url": "the article's link",
    },
    oracle_kind="metadata",
    checks={
        "metadata": ["authors_match", "byline_plausible"],
        "time": ["published_within_15m"],
    },
    needs="a readable front page and a story from the feeds with a headline to ask about",
)


def build(ctx: Context) -> list[dict]:
    if not ctx.home_ok:
        return []
    # The day's pick is one of the newest stories; the reserve asks about every story but the
    # lead (each is in its section's listing, 40 deep, and in the site's search).
    stories = ctx.newest[1:] if ctx.reserve else ctx.newest[1:10]
    return [_task(ctx, r) for r in candidates(ctx, stories, "who")]


def _task(ctx: Context, r: PollRow) -> dict:
    task = base_task(
        INTENT,
        ctx.site,
        ctx.day,
        ctx.site.home,
        source(r),
        key=r.item_url,
        headline=r.title or "",
    )
    task["inputs"]["headline"] = r.title
    task["oracle"].update(target_url=r.item_url, probes=[{"url": r.item_url, "when": "after"}])
    return task


BUILDS = ((50, build),)
