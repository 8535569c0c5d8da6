"""Time in the newsroom: the clock a server reads, and how every instant is normalised to UTC.

Content never reads the real clock itself; a server asks its clock (real time by default, a
FixedClock in tests) and passes the instant down.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def utc_now() -> datetime:
    """The default clock: real time, UTC."""
    return datetime.now(UTC)


class FixedClock:
    """A clock stopped at one instant; tests move it explicitly with set() or advance()."""

    def __init__(self, at: datetime) -> None:
        self._at = as_utc(at)

    def __call__(self) -> datetime:
        return self._at

    def set(self, at: datetime) -> None:
        self._at = as_utc(at)

    def advance(self, delta: timedelta) -> datetime:
        self._at = self._at + delta
        return self._at

    def __repr__(self) -> str:
        return f"FixedClock({self._at.isoformat()})"


def as_utc(at: datetime) -> datetime:
    """Normalise an instant to aware UTC; a naive datetime is taken to be UTC already."""
    if at.tzinfo is None:
        return at.replace(tzinfo=UTC)
    return at.astimezone(UTC)
