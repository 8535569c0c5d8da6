"""A killed run is marked failed, so it stops holding the run queue and the browser slots.

Dagster's run monitoring (the daemon's, `dagster_home/dagster.yaml`) asks the run launcher
whether a started run's worker is alive; the default launcher cannot tell (it says nothing, and
a SIGKILLed run stays STARTED for ever, counted against `max_concurrent_runs`). `LocalRunLauncher`
is the default launcher that can: every run's worker logs its pid when it starts ("Started
process for run" for a run the daemon launched, "Executing steps in process" for one run in
process by `newsbench demo` / `backfill`), and a pid that is gone (or a zombie, or reused by a
newer process) is a dead run (`core.processes`). Workers are on this machine: a deployment that
runs them elsewhere uses its platform's launcher, which has its own check (Kubernetes, ECS).

`fail_dead_runs` does the same from the CLI before it starts runs, for an instance with no
daemon: the dead runs marked failed and their concurrency slots given back.
"""

from __future__ import annotations

import json
import socket

from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus, RunsFilter
from dagster._core.launcher import CheckRunHealthResult, DefaultRunLauncher, WorkerStatus
from dagster._core.storage.dagster_run import DagsterRun
from dagster._core.storage.tags import GRPC_INFO_TAG

from newsbench_dagster.core.processes import process_alive

# The machine a run executed in process by the CLI ran on (`cli.fanout`).
HOST_TAG = "newsbench/host"
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}


def on_this_machine(run: DagsterRun) -> bool:
    """Whether the run's worker is on this machine as far as its tags tell: the CLI's runs say
    where they ran, the launcher's name the code server that started them; a run with neither
    was executed in process by whoever created it here."""
    if HOST_TAG in run.tags:
        return run.tags[HOST_TAG] == socket.gethostname()
    if GRPC_INFO_TAG in run.tags:
        try:
            host = json.loads(run.tags[GRPC_INFO_TAG]).get("host")
        except (ValueError, AttributeError):
            return False
        return host in _LOOPBACK or host == socket.gethostname()
    return True


def worker_of(instance: DagsterInstance, run_id: str) -> tuple[int, float] | None:
    """(pid, when it was logged) of the process that executes run `run_id`: the first engine
    event that names a pid (later ones may be a step's subprocess); None before there is one."""
    for entry in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT):
        data = entry.dagster_event.engine_event_data if entry.dagster_event else None
        pid = data.metadata.get("pid") if data is not None else None
        if pid is not None and str(pid.value).isdigit():
            return int(pid.value), entry.timestamp
    return None


def dead_worker(instance: DagsterInstance, run: DagsterRun) -> str | None:
    """Why the worker of started run `run` is dead, or None while it is alive (or has not yet
    said which process it is, or is on another machine)."""
    if not on_this_machine(run):
        return None
    worker = worker_of(instance, run.run_id)
    if worker is None:
        return None
    pid, logged_at = worker
    if process_alive(pid, started_by=logged_at):
        return None
    return (
        f"the run's process (pid {pid}) is gone: killed, or its machine restarted, before the "
        "run could finish; its step was interrupted (re-run the partition)"
    )


def attempt_running(instance: DagsterInstance, run_id: str) -> bool:
    """Whether Dagster run `run_id` may still be writing: not finished, and not a started run
    whose worker is gone."""
    run = instance.get_run_by_id(run_id)
    if run is None or run.is_finished:
        return False
    return run.status != DagsterRunStatus.STARTED or dead_worker(instance, run) is None


class LocalRunLauncher(DefaultRunLauncher):
    """Dagster's default launcher, plus the run-worker health check run monitoring needs."""

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        why = dead_worker(self._instance, run)
        if why is None:
            return CheckRunHealthResult(WorkerStatus.RUNNING)
        return CheckRunHealthResult(WorkerStatus.FAILED, why)


def fail_dead_runs(instance: DagsterInstance) -> list[str]:
    """Mark every started run whose worker is gone failed, and give back the concurrency slots
    it held; the ids of the runs so marked."""
    failed = []
    for run in instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.STARTED])):
        why = dead_worker(instance, run)
        if why is None:
            continue
        now = instance.get_run_by_id(run.run_id)
        if now is None or now.status != DagsterRunStatus.STARTED:
            continue  # it ended on its own meanwhile
        instance.report_run_failed(now, why)
        if instance.event_log_storage.supports_global_concurrency_limits:
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        failed.append(run.run_id)
    return failed
