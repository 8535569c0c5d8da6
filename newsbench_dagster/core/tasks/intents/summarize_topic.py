"""summarize_topic: a section page from the homepage's navigation, summarised."""

from __future__ import annotations

from newsbench_dagster.core.tasks.intents.base import Context, Intent, base_task, candidates, source

INTENT = Intent(
    name="summarize_topic",
    kind="read",
    rank=7,
    prompts={
        "en": "Summarise in two to four sentences what {name} is reporting about {topic} "
        "right now.",
        "de": "Fasse in zwei bis vier Sätzen zusammen, was {name} gerade zum Thema {topic} "
        "berichtet.",
        "fr": "Résume en deux à quatre phrases ce que {name} rapporte en ce moment sur le "
        "thème {topic}.",
    },
    answer_format={"summary": "a few sentences covering the page's top stories"},
    oracle_kind="dom_state",
    checks={"semantic": ["covers_top_stories", "grounded_in_page"]},
    needs="a section the homepage's navigation links to whose page lists stories (checked at"
    " run time: a page listing none voids the run)",
)


def build(ctx: Context) -> list[dict]:
    tasks = []
    for r in candidates(ctx, ctx.sections, "summary"):
        task = base_task(INTENT, ctx.site, ctx.day, r.item_url, source(r), topic=r.title)
        task["inputs"]["topic"] = r.title
        tasks.append(task)
    return tasks


BUILDS = ((70, build),)
