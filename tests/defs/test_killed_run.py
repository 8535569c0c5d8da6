"""A killed run is marked failed and the queue moves (issue #21, defect 2): the project's own
instance config (`dagster_home/dagster.yaml`) and the real daemon, a run killed with SIGKILL
while it works, first one run in process the way `newsbench backfill` runs it, then one the
daemon launched; each is marked FAILURE and the run queued behind it (one run at a time)
starts and finishes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from dagster import DagsterInstance, DagsterRunStatus

from newsbench_dagster.paths import DAGSTER_HOME, PROJECT_ROOT
from newsbench_dagster.run_health import HOST_TAG, fail_dead_runs, worker_of
from tests.support.services import stop_group

pytestmark = pytest.mark.heavy(40)

JOBS = """
import time
from dagster import Definitions, job, op

@op(pool="browser")
def work():
    while True:  # until it is killed
        time.sleep(0.2)

@op
def done():
    return 1

@job
def blocker():
    work()

@job
def quick():
    done()

defs = Definitions(jobs=[blocker, quick])
"""

IN_PROCESS = """
import sys
sys.path.insert(0, {folder!r})
from dagster import DagsterInstance
from jobs import blocker
blocker.execute_in_process(instance=DagsterInstance.get(), tags={tags!r})
"""


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A DAGSTER_HOME with the shipped instance config, and a code location of two jobs."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text((DAGSTER_HOME / "dagster.yaml").read_text())
    (tmp_path / "jobs.py").write_text(JOBS)
    (tmp_path / "workspace.yaml").write_text(
        "load_from:\n  - python_file:\n      relative_path: jobs.py\n"
        f"      working_directory: {tmp_path}\n"
    )
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    # Its storage created here: processes opening a new instance at once race to create it.
    DagsterInstance.get().dispose()
    return tmp_path


def _env(tmp_path) -> dict:
    return {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "PYTHONPATH": str(PROJECT_ROOT)}


def _wait(what: str, predicate, timeout: float, logs=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    pytest.fail(f"timed out waiting for {what}" + (f"\n{logs()}" if logs else ""))


_STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_worker_left():
    """A test that fails before it kills its worker leaves none running."""
    yield
    while _STARTED:
        worker = _STARTED.pop()
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def _run_in_process(tmp_path, tags: dict | None = None) -> subprocess.Popen:
    """`blocker` executed in a process of its own, as `newsbench backfill` executes a run."""
    worker = subprocess.Popen(
        [sys.executable, "-c", IN_PROCESS.format(folder=str(tmp_path), tags=tags or {})],
        env=_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "in_process.log", "wb"),  # noqa: SIM115
    )
    _STARTED.append(worker)
    return worker


def _started_with_pid(instance: DagsterInstance, job: str):
    """The job's started run once its worker has logged its pid: (run id, pid)."""
    for run in instance.get_runs():
        if run.job_name == job and run.status == DagsterRunStatus.STARTED:
            worker = worker_of(instance, run.run_id)
            if worker:
                return run.run_id, worker[0]
    return None


def _status(instance: DagsterInstance, run_id: str) -> DagsterRunStatus:
    return instance.get_run_by_id(run_id).status


def test_a_killed_run_is_failed_and_the_queue_moves(home):
    tmp_path = home
    log = open(tmp_path / "daemon.log", "wb")  # noqa: SIM115 - lives as long as the daemon
    daemon = subprocess.Popen(
        [sys.executable, "-m", "dagster._daemon", "run", "-w", "workspace.yaml"],
        cwd=tmp_path,
        env=_env(tmp_path),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )

    def logs() -> str:
        return (tmp_path / "daemon.log").read_text()[-4000:]

    def launch(job: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "dagster", "job", "launch", "-w", "workspace.yaml", "-j", job],
            cwd=tmp_path,
            env=_env(tmp_path),
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr[-3000:]

    try:
        with DagsterInstance.get() as instance:
            # 1. A run executed in process (as `newsbench backfill` does), killed mid-step.
            worker = _run_in_process(tmp_path)
            first, pid = _wait(
                "the in-process run", lambda: _started_with_pid(instance, "blocker"), 60
            )
            assert pid == worker.pid
            launch("blocker")  # queued behind it: one run at a time
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait()
            killed_at = time.monotonic()
            _wait(
                "the killed run to be marked failed",
                lambda: _status(instance, first) == DagsterRunStatus.FAILURE,
                60,
                logs,
            )
            marked_after = time.monotonic() - killed_at
            failure = instance.get_run_record_by_id(first)
            messages = [e.message for e in instance.all_logs(first)]
            assert any(f"process (pid {pid}) is gone" in m for m in messages), messages[-5:]
            assert failure.dagster_run.status == DagsterRunStatus.FAILURE

            # 2. The queued run starts (the daemon launches it), and is killed in turn.
            second, pid = _wait(
                "the queued run to start",
                lambda: _started_with_pid(instance, "blocker"),
                90,
                logs,
            )
            assert second != first
            launch("quick")
            os.kill(pid, signal.SIGKILL)
            _wait(
                "the daemon-launched run to be marked failed",
                lambda: _status(instance, second) == DagsterRunStatus.FAILURE,
                60,
                logs,
            )

            # 3. The run queued behind that one starts and finishes.
            def quick_done():
                runs = [r for r in instance.get_runs() if r.job_name == "quick"]
                return (
                    runs
                    and runs[0].status in (DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE)
                    and runs[0]
                )

            run = _wait("the last queued run to finish", quick_done, 90, logs)
            assert run.status == DagsterRunStatus.SUCCESS, logs()
            print(f"killed run marked failed {marked_after:.1f}s after SIGKILL")
            assert marked_after < 30
    finally:
        stop_group(daemon, grace_s=20)
        log.close()


def test_the_cli_marks_killed_runs_failed_and_frees_their_browser_slots(home):
    """Without a daemon (`newsbench backfill` alone), the next command does it."""
    tmp_path = home
    with DagsterInstance.get() as instance:
        instance.event_log_storage.set_concurrency_slots("browser", 2)
        worker = _run_in_process(tmp_path)
        run_id, _ = _wait("the run", lambda: _started_with_pid(instance, "blocker"), 60)
        _wait(
            "its browser slot",
            lambda: instance.event_log_storage.get_concurrency_info("browser").active_slot_count,
            30,
        )
        assert fail_dead_runs(instance) == []  # alive: left alone
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        assert fail_dead_runs(instance) == [run_id]
        assert _status(instance, run_id) == DagsterRunStatus.FAILURE
        assert instance.event_log_storage.get_concurrency_info("browser").active_slot_count == 0
        assert fail_dead_runs(instance) == []

        # A run another machine executed (a shared instance): its pid means nothing here.
        worker = _run_in_process(tmp_path, {HOST_TAG: "another-machine"})
        elsewhere = _wait("the other run", lambda: _started_with_pid(instance, "blocker"), 60)
        worker.kill()
        worker.wait()
        assert fail_dead_runs(instance) == []
        assert _status(instance, elsewhere[0]) == DagsterRunStatus.STARTED
