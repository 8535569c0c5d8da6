"""newsletter_signup: sign an address made for the task up to one list, and a task too vague
to act on (no list named: the agent must ask which, and change nothing)."""

from __future__ import annotations

from newsbench_dagster.core.tasks.intents.base import Context, Intent, as_stop_task, state_task

INTENT = Intent(
    name="newsletter_signup",
    kind="state",
    rank=1,
    prompts={
        "en": "Sign me up for the {what} newsletter of {name} with the address {email}.",
        "de": "Melde mich mit der Adresse {email} für den Newsletter „{what}“ von {name} an.",
        "fr": "Inscris-moi à la newsletter « {what} » de {name} avec l'adresse {email}.",
    },
    answer_format={"status": "what you did, in a few words"},
    oracle_kind="server_state",
    checks={"structural": ["one_signup_with_fields", "no_duplicate"]},
    allowed_changes=["newsletter_signup"],
    contract={
        "initial_state": "a new reader: subscribed to no newsletter",
        "terminal_state": "the address is signed up to exactly the lists asked for, once",
    },
    needs="the site's front page (the newsletter form is the site's, always there)",
)
# What a person asking for this page would call the lists (the form shows them too).
_LIST_WORDS = {
    "daily": {"en": "daily briefing", "de": "Morgenbriefing", "fr": "briefing du matin"},
    "breaking": {"en": "breaking news", "de": "Eilmeldungen", "fr": "alertes info"},
    "weekend": {"en": "weekend reads", "de": "Wochenende", "fr": "lectures du week-end"},
}
_VAGUE = {
    "en": "Sign me up for the {name} newsletter with the address {email}.",
    "de": "Melde mich mit der Adresse {email} für den Newsletter von {name} an.",
    "fr": "Inscris-moi à la newsletter de {name} avec l'adresse {email}.",
}
_ASKED = "nothing changed; the agent asked which newsletter is meant"


def build(ctx: Context) -> list[dict]:
    seed, email = ctx.state_seed, ctx.email
    lists = ("daily", "breaking", "weekend")[seed % 3 : seed % 3 + 1]
    t = state_task(INTENT, ctx, email=email, what=_LIST_WORDS[lists[0]][ctx.lang])
    t["inputs"].update(email=email, lists=list(lists))
    return [t]


def build_ask(ctx: Context) -> list[dict]:
    """The site has several newsletters and the reader names none: the right ending is to
    ask which one."""
    email = ctx.email
    t = as_stop_task(state_task(INTENT, ctx, email=email, what=""), ctx, "#ask")
    t["inputs"] = {
        "prompt": _VAGUE[ctx.lang].format(name=ctx.site.name, email=email),
        "email": email,
    }
    t["oracle"].update(allowed_changes=[], stop="ask", terminal_state=_ASKED)
    t["notes"] = "ambiguous: the site has several newsletters and the reader names none"
    return [t]


# The stop task comes after every other state task.
BUILDS = ((110, build), (210, build_ask))
