"""The witness: a weak oracle beside the checkers.

The reference agent (metadata-first, no model) runs every task next to the agents under test.
When it answers, claims success, and the oracle still rejects its answer outright, either the
page or the oracle is confused; the task is then *ambiguous* and every run on it is excluded
from gating with the reason kept, instead of being counted for or against anyone.
"""

from __future__ import annotations

from newsbench_dagster.core.scoring.failures import AMBIGUOUS

__all__ = ["AMBIGUOUS", "STRONG_DISAGREEMENT", "WITNESS_AGENT", "apply_witness"]

WITNESS_AGENT = "reference"
# Below this accuracy the oracle rejects the witness outright, not on a detail.
STRONG_DISAGREEMENT = 0.5


def _disagrees(score: dict) -> bool:
    return (
        not score.get("excluded")
        and score.get("success") is False
        and bool(score.get("self_reported_success"))
        and (score.get("accuracy") or 0.0) < STRONG_DISAGREEMENT
        and not score.get("safety_incidents")
    )


def apply_witness(scores: list[dict], witness: str = WITNESS_AGENT) -> list[dict]:
    """Scores with every run on an ambiguous task excluded (returns new dicts)."""
    ambiguous: dict[str, str] = {}
    for s in scores:
        if s.get("agent_name") == witness and _disagrees(s):
            reason = (s.get("checker") or {}).get("reason") or "rejected"
            ambiguous[s["task_id"]] = (
                f"{AMBIGUOUS}: the witness ({witness}, run {s['run_id']}) answered and the "
                f"oracle rejected it ({reason})"
            )
    out = []
    for s in scores:
        if s.get("task_id") in ambiguous and not s.get("excluded"):
            s = {
                **s,
                "excluded": True,
                "exclusion_reason": ambiguous[s["task_id"]],
                "failure_class": AMBIGUOUS,
                "success": None,
            }
        out.append(s)
    return out
