"""notification_settings: the final saved settings as asked, every other section as it was,
read from the world's event log (see `state_base`).

Inputs (`task["inputs"]`): {"settings": {section id: bool, ...}}, only the sections to change.
"""

from __future__ import annotations

from newsbench_dagster.core.scoring.checkers.base import Evidence, Verdict, flag
from newsbench_dagster.core.scoring.checkers.state_base import (
    event_data,
    no_other_changes,
    own_events,
    state_unknown,
    state_verdict,
)


def check(answer: dict, ev: Evidence) -> Verdict:
    """The final saved settings have every requested section at the requested value and every
    other section as it was before the first save. Saving more than once is fine: only the
    final state counts."""
    if (unknown := state_unknown(ev)) is not None:
        return unknown
    wanted = ev.inputs.get("settings") or {}
    saves = own_events(ev, "notification_settings")
    before = (event_data(saves[0]).get("before") or {}) if saves else {}
    after = (event_data(saves[-1]).get("after") or {}) if saves else {}
    wrong = sorted(k for k, v in wanted.items() if k not in after or after[k] is not bool(v))
    changed = sorted(
        k for k in set(before) | set(after) if k not in wanted and before.get(k) != after.get(k)
    )
    comps = {
        "submitted": flag(bool(saves), count=len(saves)),
        "requested": flag(bool(saves) and not wrong, wrong=wrong),
        "others_unchanged": flag(bool(saves) and not changed, changed=changed),
        "no_other_changes": no_other_changes(ev, {"notification_settings"}),
    }
    problems = []
    if not saves:
        problems.append(f"no notification settings saved on {ev.task['site']}")
    else:
        if wrong:
            asked = (f"{k} is {after.get(k)}, not {wanted[k]}" for k in wrong)
            problems.append("not as asked: " + ", ".join(asked))
        if changed:
            problems.append("side effect: also changed " + ", ".join(changed))
    return state_verdict(comps, problems, "settings saved as asked", bool(saves))
