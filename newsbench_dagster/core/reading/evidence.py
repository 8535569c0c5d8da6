"""Choosing a field's value from every signal that names one: each candidate votes with a
weight (how far its source is trusted), candidates that say the same thing pool their votes,
and the best-supported value wins. The winner is written as its first candidate in precedence
order says it, so a timestamp with a time beats the same day without one.

The result carries its source, a confidence (the winner's share of all the weight), the
strong sources that said otherwise and the rival readings nearly as well supported (the field
is then *ambiguous*: a checker accepts any of them): a disagreement is reported, never hidden.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

STRONG = 2.5  # a source at or above this weight is worth naming when it disagrees
# A rival reading makes a field ambiguous when it has a strong source's support and at least
# this share of the winner's: the page says two things and neither clearly wins.
RIVAL_SHARE = 0.5


@dataclass(frozen=True)
class Vote:
    value: Any
    source: str
    weight: float


@dataclass(frozen=True)
class Choice:
    value: Any
    source: str
    confidence: float  # the winner's share of the total weight, 0..1
    dissent: tuple[str, ...] = ()  # strong sources that named something else
    # Other readings as well supported (RIVAL_SHARE): the field is ambiguous between them
    # and the winner, each written as its first candidate in precedence order says it.
    rivals: tuple[Any, ...] = ()


def choose(votes: Sequence[Vote], same: Callable[[Any, Any], bool]) -> Choice | None:
    """The best-supported value; ties go to the earlier (higher-precedence) candidate."""
    votes = [v for v in votes if v.value and v.weight > 0]
    if not votes:
        return None
    support = [sum(o.weight for o in votes if o is v or same(v.value, o.value)) for v in votes]
    best = max(range(len(votes)), key=lambda i: (support[i], -i))
    winner = next(v for v in votes if v is votes[best] or same(votes[best].value, v.value))
    total = sum(v.weight for v in votes)
    dissent = tuple(
        dict.fromkeys(
            v.source for v in votes if v.weight >= STRONG and not same(winner.value, v.value)
        )
    )
    rivals: list[Any] = []
    for i, v in enumerate(votes):
        if same(winner.value, v.value) or any(same(r, v.value) for r in rivals):
            continue
        if support[i] >= max(STRONG, RIVAL_SHARE * support[best]):
            rivals.append(v.value)
    return Choice(
        winner.value, winner.source, round(support[best] / total, 3), dissent, tuple(rivals)
    )
