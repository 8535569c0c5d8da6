"""A run's judgement, as a person reads it: the verdict, why, and what each check compared.

`judgement(score)` is what `keep` writes beside a run's `run.json` (`judgement.json`); `why`
is its one line for a table. Both read the score row `core.scoring.score` made, never the
agent's own claim.
"""

from __future__ import annotations

from typing import Any

from newsbench_dagster.core.artifacts import ArtifactStore

# The score's parts of the reward, for whoever asks why a reward is what it is.
_REWARD_PARTS = ("accuracy", "timeliness", "efficiency")


def verdict(score: dict) -> str:
    """pass, fail, or excluded (nobody's failure: the environment, the oracle, ambiguity)."""
    if score.get("excluded"):
        return "excluded"
    return "pass" if score.get("success") else "fail"


def why(score: dict) -> str:
    """One line: why the run was excluded or failed (empty for a pass)."""
    checker = score.get("checker") or {}
    if score.get("excluded"):
        return str(score.get("exclusion_reason") or checker.get("reason") or "excluded")
    if score.get("success"):
        return ""
    failed = [
        name
        for name, part in (checker.get("components") or {}).items()
        if isinstance(part, dict) and part.get("passed") is False
    ]
    reason = str(checker.get("reason") or score.get("failure_class") or "failed")
    return f"{reason} (failed: {', '.join(failed)})" if failed else reason


def judgement(score: dict) -> dict[str, Any]:
    """The run's judgement: verdict, failure class, why, every check with what it compared
    (its detail: expected and got where the checker says), the other verdicts (trajectory,
    side effects, stop, security) and the reward with its parts."""
    checker = score.get("checker") or {}
    return {
        "run_id": score.get("run_id"),
        "task_id": score.get("task_id"),
        "intent": score.get("intent"),
        "verdict": verdict(score),
        "failure_class": score.get("failure_class"),
        "why": why(score),
        "checks": checker.get("components") or {},
        "verdicts": score.get("verdicts") or {},
        "reward": score.get("reward"),
        "reward_parts": {k: score.get(k) for k in _REWARD_PARTS if k in score},
        "reward_components": score.get("reward_components"),
        "checker": checker,
    }


def keep(store: ArtifactStore, run: dict, score: dict) -> str | None:
    """Write the run's judgement as `judgement.json` beside its `run.json` in `store`; the
    URI written, or None where the run kept no run.json there."""
    uri = (run.get("artifacts") or {}).get("run")
    key = store.key_of(uri) if uri else None
    if key is None:
        return None
    return store.put_json(f"{key.rsplit('/', 1)[0]}/judgement.json", judgement(score))
