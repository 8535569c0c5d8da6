"""extract_article_metadata: one task per newest article item (up to `articles_per_site`; the
reserve: every article the poll found)."""

from __future__ import annotations

from newsbench_dagster.core.tasks.intents.base import Context, Intent, base_task, source

INTENT = Intent(
    name="extract_article_metadata",
    kind="read",
    rank=2,
    prompts={
        "en": "For this article from {name}, give the headline, the author(s), "
        "when it was published and when it was last updated.",
        "de": "Nenne für diesen Artikel von {name} Überschrift, Autor(en), "
        "Veröffentlichungszeit und letzte Aktualisierung.",
        "fr": "Pour cet article de {name}, donne le titre, le ou les auteurs, "
        "la date de publication et celle de la dernière mise à jour.",
    },
    answer_format={
        "headline": "the article's headline",
        "authors": "list of author names ([] when the page names none)",
        "published": "publication time, ISO 8601 with offset",
        "modified": "last update time if shown, ISO 8601 (optional)",
    },
    oracle_kind="metadata",
    checks={
        "metadata": ["headline_fuzzy>=0.8", "byline_plausible"],
        "time": ["published_within_15m", "modified_within_15m"],
    },
    needs="an article from the site's feeds or sitemaps (its page has a headline)",
)


def build(ctx: Context) -> list[dict]:
    tasks = []
    for r in ctx.newest if ctx.reserve else ctx.newest[: ctx.articles_per_site]:
        task = base_task(INTENT, ctx.site, ctx.day, r.item_url, source(r))
        task["inputs"]["fields"] = ["headline", "authors", "published", "modified"]
        tasks.append(task)
    return tasks


BUILDS = ((20, build),)
