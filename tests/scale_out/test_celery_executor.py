"""Several machines, on one: a run's steps go through Dagster's celery executor to two celery
workers over a real Redis broker, with the instance (runs, events) in a real PostgreSQL."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from dagster import DagsterEventType, DagsterInstance, execute_job, reconstructable

from newsbench_dagster.definitions import CELERY_SETTINGS
from tests.support.services import postgres_server, redis_server

pytestmark = pytest.mark.heavy(50)

SUPPORT = Path(__file__).resolve().parents[1] / "support"
WORKERS = ("w1", "w2")
VISIBILITY_S = 6


def _instance_yaml(postgres_url: str) -> str:
    # psycopg2 named: SQLAlchemy 2.1 reads a bare postgresql:// as psycopg 3, which
    # dagster-postgres does not install.
    url = postgres_url.replace("postgresql://", "postgresql+psycopg2://", 1)
    return yaml.safe_dump(
        {"storage": {"postgres": {"postgres_url": url}}, "telemetry": {"enabled": False}}
    )


def _wait_for_workers(broker: str, names: tuple[str, ...], workers: list) -> None:
    """Until every worker answers the broker's ping: a run submitted earlier would let the
    first worker up take every step."""
    from celery import Celery

    app = Celery(broker=broker, backend=broker)
    deadline = time.monotonic() + 90
    seen: set[str] = set()
    while time.monotonic() < deadline:
        if dead := [w.args for w in workers if w.poll() is not None]:
            raise AssertionError(f"a celery worker exited: {dead}")
        seen = {name.split("@")[0] for reply in app.control.ping(timeout=0.5) for name in reply}
        if seen >= set(names):
            return
    raise AssertionError(f"only {sorted(seen)} of the workers answered the broker")


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


@pytest.fixture
def celery_deployment(tmp_path, monkeypatch):
    """Redis, Postgres, a DAGSTER_HOME on Postgres, two celery workers; yields the run config."""
    with redis_server(tmp_path / "redis") as broker, postgres_server() as postgres_url:
        home = tmp_path / "dagster_home"
        home.mkdir()
        (home / "dagster.yaml").write_text(_instance_yaml(postgres_url))
        executor = {
            "broker": broker,
            "backend": broker,
            # The deployment's settings, with the timeouts in seconds instead of hours: longer
            # than any step of these jobs, and a sweep for abandoned steps every second.
            "config_source": {
                **CELERY_SETTINGS,
                "broker_transport_options": {
                    **CELERY_SETTINGS["broker_transport_options"],
                    "visibility_timeout": VISIBILITY_S,
                    "unacked_restore_interval": 1,
                },
            },
        }
        celery_config = tmp_path / "celery.yaml"
        celery_config.write_text(yaml.safe_dump({"execution": {"config": executor}}))
        env = {
            **os.environ,
            "DAGSTER_HOME": str(home),
            # dagster-celery starts `celery` from PATH.
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
            "PYTHONPATH": os.pathsep.join([str(SUPPORT), str(SUPPORT.parents[1])]),
        }
        monkeypatch.setenv("DAGSTER_HOME", str(home))
        # The schema made once, here: workers starting together would race to create it.
        DagsterInstance.get().dispose()
        workers = [
            subprocess.Popen(
                [
                    str(Path(sys.executable).parent / "dagster-celery"),
                    "worker",
                    "start",
                    "-A",
                    "dagster_celery.app",
                    "-y",
                    str(celery_config),
                    "-n",
                    name,
                    "-i",
                    "celery_job",
                    "--",
                    "--concurrency=1",
                    "--pool=prefork",
                ],
                env={**env, "NEWSBENCH_WORKER": name},
                stdout=(tmp_path / f"{name}.log").open("w"),
                stderr=subprocess.STDOUT,
                # dagster-celery runs `celery` as a child, which forks its pool: one group
                # each, so that stopping (or killing) a worker takes all of it.
                start_new_session=True,
            )
            for name in WORKERS
        ]
        try:
            _wait_for_workers(broker, WORKERS, workers)
            monkeypatch.syspath_prepend(str(SUPPORT))
            yield {"execution": {"config": executor}}, dict(zip(WORKERS, workers, strict=True))
        finally:
            for w in workers:
                _signal_group(w, signal.SIGTERM)
            for w in workers:
                try:
                    w.wait(20)
                except subprocess.TimeoutExpired:
                    _signal_group(w, signal.SIGKILL)


def test_one_runs_steps_are_spread_over_two_celery_workers(celery_deployment):
    import celery_job

    run_config, _ = celery_deployment
    with DagsterInstance.get() as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        job = reconstructable(celery_job.spread)
        with execute_job(job, instance=instance, run_config=run_config) as result:
            assert result.success
            ran_on = result.output_for_node("gather")
            run_id = result.run_id
        # Every step ran on a celery worker, never in the launching process; both took some.
        assert len(ran_on) == celery_job.STEPS
        assert set(ran_on) == set(WORKERS), ran_on
        # The workers' events reached the shared Postgres storage: every step once.
        successes = instance.get_records_for_run(
            run_id, of_type=DagsterEventType.STEP_SUCCESS
        ).records
        steps = sorted(r.event_log_entry.step_key for r in successes)
        assert steps == sorted([*(f"where_{i}" for i in range(celery_job.STEPS)), "gather"])


def test_the_celery_deployment_sends_every_newsbench_job_to_celery():
    """Wiring only (the job itself needs BigQuery, which is not here): the `celery` variant's
    jobs use the celery executor, its broker read from the environment when a run starts."""
    from newsbench_dagster import definitions

    defs = definitions.celery()
    for name in ("site_day_job", "kpi_job", "candidate_job"):
        job = defs.resolve_job_def(name)
        assert job.executor_def.name == "celery", name
    assert definitions.defs.resolve_job_def("site_day_job").executor_def.name == "in_process"


def test_a_worker_killed_mid_step_hands_the_step_to_the_other(celery_deployment, tmp_path):
    """SIGKILL the worker running the step (its whole process group, as a machine lost):
    the broker gives the step to the surviving worker, the run succeeds, and the step's
    success is recorded once."""
    import celery_job

    run_config, workers = celery_deployment
    markers = tmp_path / "markers"
    markers.mkdir()
    config = {**run_config, "ops": {"slow": {"config": {"marker_dir": str(markers)}}}}
    outcome: dict = {}

    def run() -> None:
        with DagsterInstance.get() as instance:
            job = reconstructable(celery_job.one_slow_step)
            with execute_job(job, instance=instance, run_config=config) as result:
                outcome["success"] = result.success
                outcome["ran_on"] = result.output_for_node("slow") if result.success else None
                outcome["run_id"] = result.run_id

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    while not (started := list(markers.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert started, "the step never started on a worker"
    victim = started[0].name.removeprefix("started-")
    _signal_group(workers[victim], signal.SIGKILL)
    thread.join(120)
    assert not thread.is_alive(), "the run never ended after its worker was killed"

    survivor = next(n for n in WORKERS if n != victim)
    assert outcome["success"] is True
    assert outcome["ran_on"] == survivor
    assert (markers / f"started-{survivor}").exists()
    with DagsterInstance.get() as instance:
        successes = instance.get_records_for_run(
            outcome["run_id"], of_type=DagsterEventType.STEP_SUCCESS
        ).records
    assert [r.event_log_entry.step_key for r in successes] == ["slow"]
