"""locate_factbox: one recent article; "none" is a valid answer."""

from __future__ import annotations

from newsbench_dagster.core.tasks.intents.base import Context, Intent, base_task, candidates, source

INTENT = Intent(
    name="locate_factbox",
    kind="read",
    rank=8,
    prompts={
        "en": "This article from {name} may have a fact box. List its entries (label and "
        "value), or say that there is none.",
        "de": "Dieser Artikel von {name} hat vielleicht einen Kasten mit den wichtigsten "
        "Fakten. Nenne seine Einträge (Bezeichnung und Wert) oder sag, dass es keinen gibt.",
        "fr": "Cet article de {name} a peut-être un encadré de faits clés. Donne ses "
        "entrées (intitulé et valeur), ou dis qu'il n'y en a pas.",
    },
    answer_format={"facts": "the fact box as {label: value}, or none: true if there is none"},
    oracle_kind="dom_state",
    checks={"structural": ["factbox_entries_or_none"]},
    needs='an article from the feeds; "none" is an answer, so it always has one',
)


def build(ctx: Context) -> list[dict]:
    rows = ctx.newest if ctx.reserve else ctx.newest[:8]
    return [
        base_task(INTENT, ctx.site, ctx.day, r.item_url, source(r))
        for r in candidates(ctx, rows, "factbox")
    ]


BUILDS = ((40, build),)
