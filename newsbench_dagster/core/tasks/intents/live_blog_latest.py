"""live_blog_latest: the newest entry of the live blog the homepage links to, made only when
the poll saw the blog show one (a blog that has just opened shows only its pinned post)."""

from __future__ import annotations

from newsbench_dagster.core.tasks.intents.base import Context, Intent, base_task, source

INTENT = Intent(
    name="live_blog_latest",
    kind="read",
    rank=3,
    prompts={
        "en": "What is the latest update in {name}'s live blog? Give its text and time "
        "(not the pinned post).",
        "de": "Was ist der neueste Eintrag im Liveblog von {name}? Nenne Text und Uhrzeit "
        "(nicht den angehefteten Beitrag).",
        "fr": "Quelle est la dernière mise à jour du direct de {name} ? Donne son texte et "
        "son heure (pas le message épinglé).",
    },
    answer_format={"text": "the newest entry's text", "time": "its time, ISO 8601"},
    oracle_kind="dom_state",
    checks={
        "structural": ["latest_non_pinned_entry"],
        "time": ["entry_time_within_5m"],
    },
    needs="a live blog the homepage links to that shows an entry that is not pinned (a blog"
    " that has just opened has none; one that shows none at run time voids the run)",
)


def build(ctx: Context) -> list[dict]:
    live = next((r for r in ctx.lives if r.item_url in ctx.live_latest), None)
    if live is None:
        return []
    return [base_task(INTENT, ctx.site, ctx.day, live.item_url, source(live))]


BUILDS = ((80, build),)
