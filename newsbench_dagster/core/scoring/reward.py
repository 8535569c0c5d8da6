"""The time-aware reward R = w_a·A + w_t·T + w_e·E (weights 0.6 / 0.3 / 0.1 by default).

T mixes time-to-first-correct (1 at 0 s, 0 at the 60 s budget) with the freshness of the
content (exponential decay with the task's staleness half-life); E is the normalised inverse
of steps, tokens and requests.
"""

from __future__ import annotations

import math
from datetime import datetime

TTFC_BUDGET_S = 60.0
# steps, tokens, requests. Tokens: 50,000, from a real model measured (benchmarks/model_agent.py,
# README "A local model"): at 5,000 half of SmolLM2's runs had the token part at zero.
EFFICIENCY_CAPS = (30, 50_000, 60)


def timeliness_parts(
    ttfc_seconds: float | None,
    published: datetime | None,
    now: datetime,
    half_life_min: float = 30.0,
) -> dict[str, float | None]:
    """The two halves of T, kept apart so a report can say which one cost reward."""
    if ttfc_seconds is None:  # never correct
        ttfc_score = 0.0
    else:
        ttfc_score = max(0.0, 1.0 - min(ttfc_seconds, TTFC_BUDGET_S) / TTFC_BUDGET_S)
    age_min = None
    if published is None:
        fresh = 0.5  # unknown age: neither rewarded nor punished
    else:
        age_min = max(0.0, (now - published).total_seconds() / 60.0)
        fresh = math.exp(-math.log(2) / half_life_min * age_min)
    return {"ttfc": ttfc_score, "freshness": fresh, "age_minutes": age_min}


def timeliness_of(parts: dict[str, float | None]) -> float:
    return 0.5 * parts["ttfc"] + 0.5 * parts["freshness"]


def timeliness(
    ttfc_seconds: float | None,
    published: datetime | None,
    now: datetime,
    half_life_min: float = 30.0,
) -> float:
    return timeliness_of(timeliness_parts(ttfc_seconds, published, now, half_life_min))


def efficiency_parts(
    steps: int, tokens: int, requests: int, caps: tuple[int, int, int] = EFFICIENCY_CAPS
) -> dict[str, float]:
    s_cap, t_cap, r_cap = caps
    return {
        "steps": 1.0 - min(steps, s_cap) / s_cap,
        "tokens": 1.0 - min(tokens, t_cap) / t_cap,
        "requests": 1.0 - min(requests, r_cap) / r_cap,
    }


def efficiency_of(parts: dict[str, float]) -> float:
    return 0.4 * parts["steps"] + 0.4 * parts["tokens"] + 0.2 * parts["requests"]


def efficiency(
    steps: int, tokens: int, requests: int, caps: tuple[int, int, int] = EFFICIENCY_CAPS
) -> float:
    return efficiency_of(efficiency_parts(steps, tokens, requests, caps))


def reward(
    accuracy: float, timeliness_score: float, efficiency_score: float, weights: dict | None = None
) -> float:
    w = weights or {}
    return (
        w.get("accuracy_weight", 0.6) * accuracy
        + w.get("timeliness_weight", 0.3) * timeliness_score
        + w.get("efficiency_weight", 0.1) * efficiency_score
    )
