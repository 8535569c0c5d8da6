"""Dagster runs of many partitions at once, from the shell: each partition is one run, executed
in process by one of `workers` worker processes and recorded in the local instance (the UI
shows them). Steps that drive Chromium claim a slot of the `browser` concurrency pool, so
parallel runs never open more browsers than the instance's pool limit allows; the warehouse is
shared by taking turns (`core.analytics.warehouse_lock`); the newsroom is the caller's.

With one worker the runs execute in this process, one after the other.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from newsbench_dagster.cli.common import StepLog
from newsbench_dagster.core.analytics.warehouse_lock import turn
from newsbench_dagster.paths import DAGSTER_HOME


@dataclass(frozen=True)
class Partition:
    """One run to make: a job of the definitions and the partition it materializes
    (`{"site": ..., "day": ...}` for a multi-partition, else the key)."""

    job: str
    key: str | dict[str, str]
    what: str  # how the progress bar and the log name it


def instance():
    """The local Dagster instance (DAGSTER_HOME, default `./dagster_home`). Opened in turn
    with other processes: workers opening a new instance at once race to create its tables."""
    os.environ.setdefault("DAGSTER_HOME", str(DAGSTER_HOME))
    home = Path(os.environ["DAGSTER_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    from dagster import DagsterInstance

    with turn(home / ".instance.lock", f"the Dagster instance in {home}"):
        return DagsterInstance.get()


_instances: dict[str, object] = {}  # per DAGSTER_HOME: a worker's runs share one


def run_config(port: int, resources: dict | None = None) -> dict:
    """The runs' config: quiet console logs, the caller's newsroom on `port`, and any other
    resource config (`{"io_manager": {"database": ...}}`)."""
    config = {name: {"config": values} for name, values in (resources or {}).items()}
    newsroom = config.setdefault("newsroom", {"config": {}})["config"]
    newsroom.setdefault("port", port)
    return {"loggers": {"console": {"config": {"log_level": "WARNING"}}}, "resources": config}


def execute(partition: Partition, config: dict, log_path: Path) -> tuple[bool, str | None]:
    """Execute one partition's run here with run config `config`; (success, run id). Its
    start, outcome and time go to the step log as it happens, whichever process runs it."""
    from dagster import MultiPartitionKey

    from newsbench_dagster.definitions import defs
    from newsbench_dagster.run_health import HOST_TAG

    runs_in = _instances.get(os.environ.get("DAGSTER_HOME", ""))
    if runs_in is None:
        runs_in = _instances[os.environ.get("DAGSTER_HOME", "")] = instance()
    key = partition.key
    key = MultiPartitionKey(key) if isinstance(key, dict) else key
    with StepLog(log_path).step(partition.what) as done:
        result = defs.resolve_job_def(partition.job).execute_in_process(
            partition_key=key,
            instance=runs_in,
            run_config=config,
            raise_on_error=False,
            tags={HOST_TAG: socket.gethostname()},  # where a dead run's pid means something
        )
        done(result.success, result.run_id)
    return result.success, result.run_id


def _warm_up() -> None:
    """A worker's first run should not wait for imports every run needs: the definitions."""
    import newsbench_dagster.definitions  # noqa: F401


class _Here:
    """The pool's interface, executing each submission at once in this process."""

    def submit(self, fn: Callable, *args) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args))
        except Exception as e:  # handed to the caller through the future, as a pool does
            future.set_exception(e)
        return future


@contextmanager
def workers(n: int) -> Iterator:
    """`n` worker processes (spawned: the caller's threads, such as the newsroom it serves,
    stay its own), or this process for n = 1. Ctrl-C cancels what has not started."""
    if n <= 1:
        yield _Here()
        return
    pool = ProcessPoolExecutor(
        max_workers=n, mp_context=multiprocessing.get_context("spawn"), initializer=_warm_up
    )
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def run_all(
    pool,
    partitions: Iterable[Partition],
    config: dict,
    log_path: Path,
    on_done: Callable[[Partition, bool, str | None], None],
) -> bool:
    """Execute `partitions` on `pool`, calling `on_done(partition, success, run_id)` as each
    ends; returns whether all succeeded. A worker that dies fails its partition (and the pool's
    unstarted ones) with the reason in the step log; completed runs stay recorded."""
    futures = {pool.submit(execute, p, config, log_path): p for p in partitions}
    ok = True
    for future in as_completed(futures):
        partition = futures[future]
        try:
            success, run_id = future.result()
        except BrokenProcessPool as e:
            StepLog(log_path).line(f"crash {partition.what}: the worker process died ({e})")
            success, run_id = False, None
        except Exception as e:  # raised outside the run's step (its log line is written)
            StepLog(log_path).line(f"crash {partition.what}: {type(e).__name__}: {e}")
            success, run_id = False, None
        ok = ok and success
        on_done(partition, success, run_id)
    return ok
