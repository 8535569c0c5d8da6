"""A job for the celery deployment test: independent steps that each say which worker ran
them, so the test can see the broker spread one run's steps over the workers. Workers import
it from this folder (PYTHONPATH), as they would a code location's module."""

import os
import time

from dagster import In, OpExecutionContext, job, op
from dagster_celery import celery_executor

STEPS = 6


@op
def where(context: OpExecutionContext) -> str:
    time.sleep(1.0)  # long enough that one worker cannot drain the queue alone
    name = os.environ.get("NEWSBENCH_WORKER", "in-process")
    context.log.info(f"ran on worker {name} (pid {os.getpid()})")
    return name


@op(ins={"names": In(list[str])})
def gather(names: list[str]) -> list[str]:
    return sorted(names)


@job(executor_def=celery_executor)
def spread():
    gather([where.alias(f"where_{i}")() for i in range(STEPS)])


@op(config_schema={"marker_dir": str})
def slow(context: OpExecutionContext) -> str:
    """Says it started (a file naming its worker), then works long enough to be killed."""
    name = os.environ.get("NEWSBENCH_WORKER", "in-process")
    with open(os.path.join(context.op_config["marker_dir"], f"started-{name}"), "w") as f:
        f.write(str(os.getpid()))
    time.sleep(3.0)
    return name


@job(executor_def=celery_executor)
def one_slow_step():
    slow()
