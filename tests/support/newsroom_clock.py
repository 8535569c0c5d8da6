"""The newsroom's clock stopped for a block: a pipeline that polls the feeds and then runs the
tasks sees the same pages throughout, whatever minute it crosses."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime

from newsbench_dagster.newsroom.clock import FixedClock


@contextlib.contextmanager
def frozen_now(newsroom) -> Iterator[datetime]:
    """Stop `newsroom`'s clock (a NewsroomServer) at now; its live clock back after."""
    live, newsroom.clock = newsroom.clock, FixedClock(datetime.now(UTC))
    try:
        yield newsroom.clock()
    finally:
        newsroom.clock = live
