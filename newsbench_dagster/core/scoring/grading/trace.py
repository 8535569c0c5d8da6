"""Trace rules: the requests the agent made during a replay, each tagged by how the recording
answered it, against a rule's forbidden or required request."""

from __future__ import annotations

from newsbench_dagster.core.scoring.grading.spec import TraceRule


def _describe(request: dict) -> str:
    return f"{str(request.get('method') or '?').upper()} {request.get('url', '')}"


def run_trace(rule: TraceRule, counted: list[dict]) -> dict:
    pattern = rule.forbid or rule.require
    assert pattern is not None  # the spec guarantees one of them
    hits = [r for r in counted if pattern.matches(r)]
    if rule.forbid is not None:
        passed = not hits
        reason = None if passed else "forbidden request made: " + ", ".join(map(_describe, hits))
    elif not hits:
        passed, reason = False, "no matching request was made"
    else:
        allowed = rule.allowed_tags
        # Every matching request must have been answered from the recording: a `miss` means the
        # site never saw it, so the action did not happen in the replayed world.
        bad = [r for r in hits if r.get("tag") not in allowed]
        passed = not bad
        reason = None
        if bad:
            reason = "; ".join(
                f"{_describe(r)} answered as {r.get('tag')!r} (needs one of: {', '.join(allowed)})"
                for r in bad
            )
    return {
        "id": rule.id,
        "kind": "forbid" if rule.forbid is not None else "require",
        "passed": passed,
        "reason": reason,
        "requests": [str(r.get("url", "")) for r in hits],
    }
