"""Taking turns on the local DuckDB warehouse across processes.

DuckDB allows one process to open a database file for writing, and no reader beside it. Runs
are long (minutes of browser work) while their reads and writes of the warehouse are short
(one partition's rows), so parallel runs share the one file by queueing for it: every
connection Newsbench opens holds an advisory lock on `<file>.lock` for as long as it is open,
exclusive to write (shared is for tools that read the file itself). Writers wait
milliseconds for each other instead of failing after DuckDB's own few retries. Readers open
the snapshot each write publishes (`snapshot`), not this file; a process outside Newsbench
that opens the file anyway is waited for by name (`snapshot.wait_for_outsiders`).
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from newsbench_dagster.core.errors import NewsbenchError

# Long enough for another run's biggest write; a held lock past it is a stuck process.
WAIT_S = 300.0
POLL_S = 0.02


class WarehouseBusy(NewsbenchError):
    """Another process held the warehouse longer than we wait."""


def lock_path(database: str | Path) -> Path:
    return Path(f"{database}.lock")


@contextmanager
def warehouse_turn(
    database: str | Path,
    *,
    shared: bool = False,
    wait_s: float = WAIT_S,
    on_wait: Callable[[str], object] | None = None,
) -> Iterator[float]:
    """Hold the warehouse's lock (shared: readers only) for the block; yields the seconds
    waited for it. An in-memory database (":memory:") needs no turn."""
    if str(database) in ("", ":memory:"):
        yield 0.0
        return
    path = lock_path(database)
    with turn(path, str(database), shared=shared, wait_s=wait_s, on_wait=on_wait) as waited:
        yield waited


@contextmanager
def turn(
    path: Path,
    what: str,
    *,
    shared: bool = False,
    wait_s: float = WAIT_S,
    on_wait: Callable[[str], object] | None = None,
) -> Iterator[float]:
    """Hold the advisory lock file `path` for `what` (shared or exclusive) for the block;
    `on_wait(what)` is called once when it has to wait."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        kind = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        started = time.monotonic()
        while True:
            try:
                fcntl.flock(fd, kind | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if on_wait is not None:
                    on_wait(what)
                    on_wait = None
                if time.monotonic() - started > wait_s:
                    raise WarehouseBusy(
                        f"{what}: another process has held it for over "
                        f"{wait_s:.0f} s ({path}); is a run stuck?"
                    ) from None
                time.sleep(POLL_S)
        try:
            yield time.monotonic() - started
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
