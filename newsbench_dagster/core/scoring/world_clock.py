"""The world's clock for scoring: when a run answered, on the clock of the world it ran in.

Timeliness (how fresh the answered story was) is measured against the world the agent saw,
never against the day the run happened to be executed:
  replay   the recording's clock (the pages are what they said then), plus the seconds the
           run took to answer;
  frozen   the newsroom's stopped clock (`--at`, frozen-clock tests, the hour sweep): its
           pages do not move while the run goes on, so the answer is at the frozen instant,
           however long it took and whatever day it is replayed;
  live     wall time: the run's start plus the seconds it took to answer.
So the same task at the same frozen instant gets the same reward every time it is run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True)
class WorldClock:
    source: str  # replay | frozen | live
    answered_at: datetime  # when the answer was given, on that clock

    def describe(self) -> dict:
        return {"source": self.source, "answered_at": self.answered_at.isoformat()}


def _instant(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return None
    return None


def world_clock(run: dict) -> WorldClock:
    """The clock `run`'s world kept, and when the run answered on it."""
    took = timedelta(seconds=run.get("answer_seconds") or 0)
    replayed = _instant((run.get("replay") or {}).get("clock"))
    if replayed is not None:
        return WorldClock("replay", replayed + took)
    world = (run.get("environment") or {}).get("world") or {}
    frozen = _instant(world.get("frozen_at"))
    if frozen is not None:
        return WorldClock("frozen", frozen)
    return WorldClock("live", run["started_at"] + took)
