"""report_correction: report a mistake in a recent article, and an impossible report (the
article named does not exist: the right ending is to say so and report nothing)."""

from __future__ import annotations

from newsbench_dagster.core.tasks.intents.base import (
    Context,
    Intent,
    as_stop_task,
    pick,
    state_task,
)

INTENT = Intent(
    name="report_correction",
    kind="state",
    rank=3,
    prompts={
        "en": "Report a mistake to the editors of {name} about this article: {url}. The "
        "problem: {what}",
        "de": "Melde der Redaktion von {name} einen Fehler in diesem Artikel: {url}. Das "
        "Problem: {what}",
        "fr": "Signale à la rédaction de {name} une erreur dans cet article : {url}. Le "
        "problème : {what}",
    },
    answer_format={"status": "what you reported, in a few words"},
    oracle_kind="server_state",
    checks={"structural": ["one_report_on_the_article"], "semantic": ["describes"]},
    allowed_changes=["correction_report"],
    contract={
        "initial_state": "no report from this reader",
        "terminal_state": "one report about the article named, describing the problem given",
    },
    needs="an article from the feeds to report on (the impossible variant needs none: its"
    " answer is the refusal)",
)
_PROBLEM = {
    "en": "the caption under the main photo names the wrong place.",
    "de": "die Bildunterschrift unter dem Hauptfoto nennt den falschen Ort.",
    "fr": "la légende sous la photo principale indique le mauvais lieu.",
}
_MISSING = {
    "en": 'Report a mistake to the editors of {name} in their article "{headline}". The '
    "problem: {what}",
    "de": "Melde der Redaktion von {name} einen Fehler im Artikel „{headline}“. Das Problem: "
    "{what}",
    "fr": "Signale à la rédaction de {name} une erreur dans l'article « {headline} ». Le "
    "problème : {what}",
}
# A headline no site of the newsroom's vocabulary can produce.
_NO_SUCH_HEADLINE = {
    "en": "Lunar ferry service to open next spring",
    "de": "Mondfähre nimmt im Frühjahr den Betrieb auf",
    "fr": "Un bac vers la Lune ouvrira au printemps",
}
_REFUSED = "nothing changed; the agent said the article cannot be found and reported nothing"


def build(ctx: Context) -> list[dict]:
    if not (r := pick(ctx.newest[:10], ctx.day, "report")):
        return []
    problem = _PROBLEM[ctx.lang]
    t = state_task(INTENT, ctx, url=r.item_url, what=problem)
    t["inputs"].update(article_url=r.item_url, problem=problem)
    return [t]


def build_refuse(ctx: Context) -> list[dict]:
    """No article of the site has the headline given: the agent must not report on another
    one, and says so."""
    lang, problem = ctx.lang, _PROBLEM[ctx.lang]
    t = as_stop_task(state_task(INTENT, ctx, url="", what=problem), ctx, "#impossible")
    headline = _NO_SUCH_HEADLINE[lang]
    t["inputs"] = {
        "prompt": _MISSING[lang].format(name=ctx.site.name, headline=headline, what=problem),
        "article_headline": headline,
        "problem": problem,
    }
    t["oracle"].update(allowed_changes=[], stop="refuse", terminal_state=_REFUSED)
    t["notes"] = "impossible: no article of the site has this headline"
    return [t]


# The stop task comes after every other state task (and after newsletter_signup's).
BUILDS = ((130, build), (230, build_refuse))
