"""Sensor and schedule ticks evaluated the way the daemon does: in a context that is closed
when the tick ends.

A context left open keeps the instance and resources it entered, and Dagster's current
defs-state storage with them; when the garbage collector later finalizes it, a closed test
instance becomes current again and some other test's Definitions fail to load
("Attempted to resolve undefined DagsterInstance weakref"). The conftest fails any test file
that leaves one open."""

from __future__ import annotations

from typing import Any

from dagster import build_schedule_context, build_sensor_context


def sensor_tick(sensor, **context: Any):
    """`sensor`'s result for one tick, with `build_sensor_context(**context)`."""
    with build_sensor_context(**context) as ctx:
        return sensor(ctx)


def schedule_tick(schedule, **context: Any) -> list:
    """The run requests of one tick of `schedule`, with `build_schedule_context(**context)`."""
    with build_schedule_context(**context) as ctx:
        return list(schedule(ctx))
