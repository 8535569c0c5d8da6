"""Several machines, on one: a run's steps go through Dagster's celery executor to two celery
workers over a real Redis broker, with the instance (runs, events) in a real PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from dagster import DagsterEventType, DagsterInstance, execute_job, reconstructable

from tests.support.services import postgres_server, redis_server

pytestmark = pytest.mark.heavy(25)

SUPPORT = Path(__file__).resolve().parents[1] / "support"
WORKERS = ("w1", "w2")


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
            # One step at a time per worker, none prefetched: the queue is shared fairly.
            "config_source": {"worker_prefetch_multiplier": 1, "task_acks_late": True},
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
            )
            for name in WORKERS
        ]
        try:
            _wait_for_workers(broker, WORKERS, workers)
            monkeypatch.syspath_prepend(str(SUPPORT))
            yield {"execution": {"config": executor}}
        finally:
            for w in workers:
                w.terminate()
            for w in workers:
                try:
                    w.wait(20)
                except subprocess.TimeoutExpired:
                    w.kill()


def test_one_runs_steps_are_spread_over_two_celery_workers(celery_deployment):
    import celery_job

    with DagsterInstance.get() as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        job = reconstructable(celery_job.spread)
        with execute_job(job, instance=instance, run_config=celery_deployment) as result:
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
