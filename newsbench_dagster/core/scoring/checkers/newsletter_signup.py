"""newsletter_signup: one signup on the task's site, for the given email and lists, read from
the world's event log (see `state_base`).

Inputs (`task["inputs"]`): {"email": str, "lists": [list id, ...]}, list ids daily | breaking |
weekend.
"""

from __future__ import annotations

from newsbench_dagster.core.scoring.checkers.base import Evidence, Verdict, flag
from newsbench_dagster.core.scoring.checkers.state_base import (
    event_data,
    no_other_changes,
    own_events,
    same_email,
    state_unknown,
    state_verdict,
)


def check(answer: dict, ev: Evidence) -> Verdict:
    """Exactly one signup on the task's site, for the given email (any case) and exactly the
    given lists; no second submission and no other change."""
    if (unknown := state_unknown(ev)) is not None:
        return unknown
    email = ev.inputs.get("email")
    wanted = set(ev.inputs.get("lists") or [])
    signups = own_events(ev, "newsletter_signup")

    def fit(e: dict) -> tuple[bool, int]:
        d = event_data(e)
        return same_email(d.get("email"), email), -len(set(d.get("lists") or []) ^ wanted)

    best = max(signups, key=fit, default=None)
    got = event_data(best)
    lists = set(got.get("lists") or [])
    missing, extra = sorted(wanted - lists), sorted(lists - wanted)
    email_ok = best is not None and same_email(got.get("email"), email)
    duplicates = len(signups) > 1 or any(event_data(e).get("duplicate") for e in signups)
    comps = {
        "submitted": flag(bool(signups), count=len(signups)),
        "fields": flag(
            email_ok and not missing and not extra,
            email=got.get("email"),
            lists=sorted(lists),
            missing=missing,
            extra=extra,
        ),
        "no_duplicate": flag(not duplicates, count=len(signups)),
        "no_other_changes": no_other_changes(ev, {"newsletter_signup"}),
    }
    problems = []
    if not signups:
        problems.append(f"no newsletter signup on {ev.task['site']}")
    else:
        if not email_ok:
            problems.append(f"wrong email {got.get('email')!r}")
        if missing:
            problems.append("missing list " + ", ".join(missing))
        if extra:
            problems.append("extra list " + ", ".join(extra))
    if duplicates:
        problems.append("side effect: duplicate submission")
    return state_verdict(comps, problems, "signed up once, as asked", bool(signups))
