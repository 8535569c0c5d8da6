"""identify_topic_page: a section from the homepage's navigation, to be found from the front
page."""

from __future__ import annotations

from newsbench_dagster.core.tasks.intents.base import Context, Intent, base_task, candidates, source
from newsbench_dagster.core.tasks.poll import PollRow

INTENT = Intent(
    name="identify_topic_page",
    kind="read",
    rank=6,
    prompts={
        "en": "Find the page of {name} that collects its stories about {topic}. Give its link.",
        "de": "Finde die Seite von {name}, die alle Artikel zum Thema {topic} sammelt. "
        "Nenne den Link.",
        "fr": "Trouve la page de {name} qui regroupe ses articles sur le thème {topic}. "
        "Donne son lien.",
    },
    answer_format={"url": "the topic (section) page's link"},
    oracle_kind="dom_state",
    checks={"structural": ["collection_page", "heading_names_topic"]},
    needs="a section the homepage's navigation links to",
)


def build(ctx: Context) -> list[dict]:
    return [_task(ctx, r) for r in candidates(ctx, ctx.sections, "topic")]


def _task(ctx: Context, r: PollRow) -> dict:
    task = base_task(
        INTENT, ctx.site, ctx.day, ctx.site.home, source(r), key=r.item_url, topic=r.title
    )
    task["inputs"]["topic"] = r.title
    task["oracle"]["probes"] = [{"url": "{answer.url}", "when": "after"}]
    return task


BUILDS = ((60, build),)
