"""find_corrections: one older article (corrections come hours after publication); "none" is
a valid answer."""

from __future__ import annotations

from newsbench_dagster.core.tasks.intents.base import Context, Intent, base_task, candidates, source

INTENT = Intent(
    name="find_corrections",
    kind="read",
    rank=4,
    prompts={
        "en": "Has this article from {name} been corrected? If so, what does the latest "
        "correction say and when was it made? If not, say there is none.",
        "de": "Wurde dieser Artikel von {name} korrigiert? Wenn ja, was steht in der "
        "letzten Korrektur und wann erschien sie? Wenn nicht, sag, dass es keine gibt.",
        "fr": "Cet article de {name} a-t-il été corrigé ? Si oui, que dit le dernier "
        "rectificatif et quand a-t-il été publié ? Sinon, dis qu'il n'y en a pas.",
    },
    answer_format={
        "text": "the latest correction's text, or null with none: true when there is none",
        "time": "its time, ISO 8601",
    },
    oracle_kind="dom_state",
    checks={"structural": ["latest_correction_or_none"]},
    needs='an article from the feeds; "none" is an answer, so it always has one',
)


def build(ctx: Context) -> list[dict]:
    newest = ctx.newest
    older = newest[len(newest) // 2 :]
    return [
        base_task(INTENT, ctx.site, ctx.day, r.item_url, source(r))
        for r in candidates(ctx, older, "corr")
    ]


BUILDS = ((30, build),)
