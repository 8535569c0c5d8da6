"""find_top_headline: the lead story of the front page, one task per readable homepage."""

from __future__ import annotations

from newsbench_dagster.core.tasks.intents.base import Context, Intent, base_task

INTENT = Intent(
    name="find_top_headline",
    kind="read",
    rank=1,
    prompts={
        "en": "What is the lead story on the front page of {name} right now? "
        "Give its headline and link.",
        "de": "Was ist gerade der Aufmacher auf der Startseite von {name}? "
        "Nenne Überschrift und Link.",
        "fr": "Quel est l'article principal à la une de {name} en ce moment ? "
        "Donne son titre et son lien.",
    },
    answer_format={"headline": "the lead story's headline", "url": "its link"},
    oracle_kind="dom_state",
    checks={
        "structural": ["lead_heading_in_main"],
        "metadata": ["headline_fuzzy>=0.8|entities>=0.5"],
    },
    needs="a readable front page with a lead story",
)


def build(ctx: Context) -> list[dict]:
    if not ctx.home_ok:
        return []
    task = base_task(INTENT, ctx.site, ctx.day, ctx.site.home, ctx.home_src)
    task["oracle"]["probes"] = [
        {"url": "{entry}", "when": "during"},
        {"url": "{entry}", "when": "after"},
    ]
    return [task]


BUILDS = ((10, build),)
