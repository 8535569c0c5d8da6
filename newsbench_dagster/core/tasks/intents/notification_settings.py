"""notification_settings: turn on alerts for a section the navigation names, nothing else."""

from __future__ import annotations

from urllib.parse import urlsplit

from newsbench_dagster.core.tasks.intents.base import Context, Intent, pick, state_task

INTENT = Intent(
    name="notification_settings",
    kind="state",
    rank=2,
    prompts={
        "en": "In my {name} notification settings, turn on alerts for {what}. Leave the "
        "rest as it is.",
        "de": "Schalte in meinen Benachrichtigungseinstellungen bei {name} die Meldungen "
        "für {what} ein. Lass den Rest, wie er ist.",
        "fr": "Dans mes réglages de notifications de {name}, active les alertes pour "
        "{what}. Ne change rien d'autre.",
    },
    answer_format={"status": "what you changed, in a few words"},
    oracle_kind="server_state",
    checks={"structural": ["requested_on_others_unchanged"]},
    allowed_changes=["notification_settings"],
    contract={
        "initial_state": "a new reader: the site's default alert settings",
        "terminal_state": "the sections asked for are on; every other setting is unchanged",
    },
    needs="a section the homepage's navigation links to (the setting to turn on)",
)


def build(ctx: Context) -> list[dict]:
    if not (r := pick(ctx.sections, ctx.day, "alerts")):
        return []
    section = urlsplit(r.item_url).path.rstrip("/").rsplit("/", 1)[-1]
    t = state_task(INTENT, ctx, what=r.title or section)
    t["inputs"]["settings"] = {section: True}
    return [t]


BUILDS = ((120, build),)
