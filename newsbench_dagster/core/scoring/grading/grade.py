"""Grading one run: extraction, the required comparisons, the trace rules and the checks (by
program or by a judge) combined into its result; nothing unverified is counted as passed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from newsbench_dagster.core.json_ready import json_ready
from newsbench_dagster.core.scoring.grading.compare import run_comparison
from newsbench_dagster.core.scoring.grading.extract import extract_fields
from newsbench_dagster.core.scoring.grading.spec import Check, GradingSpec
from newsbench_dagster.core.scoring.grading.trace import run_trace

Judge = Callable[[str, Any, dict], bool | None]
"""(question, answer, extracted fields) -> True (yes) / False (no) / None (abstains)."""


@dataclass
class GradeResult:
    status: Literal["pass", "fail", "unverified"]
    score: float | None
    extracted: dict[str, Any] = field(default_factory=dict)
    extract_errors: dict[str, str] = field(default_factory=dict)
    require: list[dict] = field(default_factory=list)
    checks: list[dict] = field(default_factory=list)
    trace: list[dict] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return json_ready(asdict(self))


def _ask_judge(judge: Judge, check: Check, answer: Any, extracted: dict) -> tuple[str, str | None]:
    try:
        said = judge(check.question, answer, dict(extracted))
    except Exception as e:  # a hosted model failing says nothing about the answer
        return "unverified", f"judge failed: {type(e).__name__}: {e}"
    if said is True:
        return "yes", None
    if said is False:
        return "no", "judge said no"
    if said is None:
        return "unverified", "judge abstained"
    return "unverified", f"judge returned {said!r}, expected True, False or None"


def _decide(
    check: Check,
    answer: Any,
    values: dict[str, Any],
    errors: dict[str, str],
    judge: Judge | None,
) -> dict:
    if check.program is not None:
        passed, reason = run_comparison(check.program, values, errors)
        verdict, by = ("yes" if passed else "no"), "program"
    elif judge is not None:
        extracted = {k: v for k, v in values.items() if k not in errors}
        verdict, reason = _ask_judge(judge, check, answer, extracted)
        by = "judge"
    else:
        verdict, by, reason = "unverified", None, "no program and no judge to decide it"
    return {
        "id": check.id,
        "question": check.question,
        "required": check.required,
        "weight": None if check.required else check.weight,
        "verdict": verdict,
        "by": by,
        "reason": reason,
    }


def grade(
    spec: GradingSpec,
    answer: Any,
    requests: Sequence[dict] = (),
    *,
    judge: Judge | None = None,
) -> GradeResult:
    """Grade one run: its final `answer` and the replay log `requests` it made."""
    values, errors = extract_fields(spec, answer)
    reasons: list[str] = []
    failed = False

    require = []
    for i, cmp in enumerate(spec.require):
        passed, reason = run_comparison(cmp, values, errors)
        require.append(
            {
                "field": cmp.field,
                "op": cmp.op,
                "value": cmp.value,
                "passed": passed,
                "reason": reason,
            }
        )
        if not passed:
            failed = True
            reasons.append(f"require[{i}] {cmp.field} {cmp.op}: {reason}")

    # The harness's own requests (warm-up, scoring the page) are not the agent's doing.
    counted = [r for r in requests if r.get("actor") != "harness"]
    trace = [run_trace(rule, counted) for rule in spec.trace]
    for t in trace:
        if not t["passed"]:
            failed = True
            reasons.append(f"trace {t['id']} ({t['kind']}): {t['reason']}")

    checks = [_decide(c, answer, values, errors, judge) for c in spec.checks]
    required_unverified = False
    yes_weight = decided_weight = 0.0
    for c in checks:
        kind = "required" if c["required"] else f"weight {c['weight']:g}"
        label = f"check {c['id']} ({kind})"
        if c["verdict"] == "unverified":
            if c["required"]:
                required_unverified = True
                reasons.append(f"{label}: unverified: {c['reason']}")
            else:
                reasons.append(f"{label}: unverified, left out of the score: {c['reason']}")
            continue
        if c["verdict"] == "no":
            reasons.append(f"{label}: no: {c['reason']}")
            if c["required"]:
                failed = True
        if not c["required"]:
            decided_weight += c["weight"]
            yes_weight += c["weight"] if c["verdict"] == "yes" else 0.0

    if failed:
        status, score = "fail", 0.0
    elif required_unverified:
        status, score = "unverified", None
    else:
        status, score = "pass", (yes_weight / decided_weight if decided_weight else 1.0)
    return GradeResult(
        status=status,
        score=score,
        extracted=values,
        extract_errors=errors,
        require=require,
        checks=checks,
        trace=trace,
        reasons=reasons,
    )
