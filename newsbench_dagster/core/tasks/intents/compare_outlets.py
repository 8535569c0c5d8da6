"""compare_outlets: this site's and the partner site's front pages, asked from this one."""

from __future__ import annotations

from newsbench_dagster.core.tasks.intents.base import Context, Intent, base_task

INTENT = Intent(
    name="compare_outlets",
    kind="read",
    rank=9,
    prompts={
        "en": "What is the lead story on the front pages of {name} and of {other} right "
        "now? Give each headline and link, and say whether they lead with the same story.",
        "de": "Was sind gerade die Aufmacher auf den Startseiten von {name} und {other}? "
        "Nenne jeweils Überschrift und Link und sag, ob beide mit derselben Geschichte "
        "aufmachen.",
        "fr": "Quels sont en ce moment les articles principaux à la une de {name} et de "
        "{other} ? Donne chaque titre et lien, et dis s'ils ouvrent sur le même sujet.",
    },
    answer_format={
        "outlets": "list of {name, headline, url}, one per outlet, in the order asked",
        "same_story": "true if both lead with the same story",
    },
    oracle_kind="dom_state",
    checks={
        "structural": ["lead_heading_in_main"],
        "metadata": ["headline_fuzzy>=0.8|entities>=0.5"],
    },
    needs="both outlets' front pages readable, each with a lead story",
)


def build(ctx: Context) -> list[dict]:
    site, partner = ctx.site, ctx.partner
    if not ctx.home_ok or partner is None or partner.key == site.key:
        return []
    task = base_task(
        INTENT,
        site,
        ctx.day,
        site.home,
        {**ctx.home_src, "partner": partner.key},
        key=partner.key,
        other=partner.name,
    )
    task["inputs"]["outlets"] = [site.name, partner.name]
    task["inputs"]["outlet_urls"] = [site.home, partner.home]
    task["allowed_origins"] = sorted({*site.allowed_origins, *partner.allowed_origins})
    task["oracle"]["probes"] = [
        {"url": partner.home, "when": "before"},
        {"url": partner.home, "when": "during"},
        {"url": partner.home, "when": "after"},
        {"url": "{entry}", "when": "after"},
    ]
    return [task]


BUILDS = ((90, build),)
