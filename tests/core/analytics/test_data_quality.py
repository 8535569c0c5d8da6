"""The data-quality suites (core.analytics.data_quality): valid partitions pass, and each kind of
broken row fails with the expectation (and column) that catches it named."""

from __future__ import annotations

import json

import pytest

from newsbench_dagster.core.analytics import data_quality as dq
from newsbench_dagster.core.analytics.tables import frame

DAY = "2026-11-02"


def run(i: int, **changes) -> dict:
    row = {
        "run_id": f"run-{i}",
        "task_id": f"task-{i % 2}",
        "site": "harbor",
        "day": DAY,
        "intent": "find_top_headline",
        "agent_name": "reference",
        "agent_version": "reference@1",
        "trial": 0,
        "accuracy": 1.0,
        "timeliness": 0.9,
        "efficiency": 0.8,
        "reward": 0.95,
        "success": True,
        "excluded": False,
        "failure_class": "success",
        "ttfc_seconds": 3.5,
        "steps": 4,
        "tokens": 1200,
        "requests": 6,
    }
    return {**row, **changes}


def excluded(i: int, reason: str = "site_down", **changes) -> dict:
    blank = dict.fromkeys(("accuracy", "timeliness", "efficiency", "reward", "success"))
    return (
        run(
            i,
            **blank,
            excluded=True,
            exclusion_reason=reason,
            failure_class=reason,
            ttfc_seconds=None,
        )
        | changes
    )


def kpi(**changes) -> dict:
    row = {
        "day": DAY,
        "site": "harbor",
        "agent_version": "reference@1",
        "slice_kind": "all",
        "slice_value": "*",
        "n_runs": 4,
        "n_scored": 3,
        "n_env_failures": 1,
        "successes": 2,
        "success_rate": 2 / 3,
        "success_ci_low": 0.21,
        "success_ci_high": 0.94,
        "mean_reward": 0.7,
        "coverage": 1.0,
    }
    return {**row, **changes}


def scores(*rows):
    return frame("run_scores", rows)


def kpis(*rows):
    return frame("kpi_daily", rows)


GOOD_SCORES = [
    run(0),
    run(1, success=False, failure_class="wrong_target", accuracy=0.0, ttfc_seconds=None),
    excluded(2),
    excluded(3, reason="task_missing"),
    run(
        4,
        excluded=True,
        success=None,
        exclusion_reason="ambiguous: the witness ...",
        failure_class="ambiguous",
    ),
]
GOOD_KPIS = [
    kpi(),
    kpi(site="*"),
    kpi(slice_kind="intent", slice_value="find_top_headline"),
    # Every run excluded: no rate, no interval, no coverage (not a tasks slice).
    kpi(
        slice_kind="intent",
        slice_value="read_article",
        n_runs=1,
        n_scored=0,
        successes=0,
        success_rate=None,
        success_ci_low=None,
        success_ci_high=None,
        mean_reward=None,
        coverage=None,
    ),
    kpi(agent_version="other@2", successes=3, success_rate=1.0, success_ci_high=1.0),
]


def failures(result: dict) -> set[tuple[str, str]]:
    return {(f["expectation"], f["column"]) for f in result["failed"]}


@pytest.mark.heavy(10)  # about 10 s on two busy cores
def test_valid_partitions_pass():
    for table, rows in (("run_scores", GOOD_SCORES), ("kpi_daily", GOOD_KPIS)):
        result = dq.validate(table, frame(table, rows))
        assert result["success"], result["failed"]
        assert result["evaluated"] == len(dq.SUITES[table]) and not result["empty"]


def test_an_empty_partition_passes_and_says_it_checked_nothing():
    for table in dq.SUITES:
        assert dq.validate(table, frame(table, [])) == {
            "success": True,
            "evaluated": 0,
            "empty": True,
            "failed": [],
        }


BROKEN_SCORES = [
    pytest.param(
        [run(0), run(0, trial=1)],
        dq.UNIQUE,
        "run_id",
        ["run-0", "run-0"],
        id="duplicate-run-id",
    ),
    pytest.param([run(0, reward=1.3)], dq.BETWEEN, "reward", [1.3], id="reward-1.3"),
    pytest.param([run(0, site=None)], dq.NOT_NULL, "site", [None], id="null-site"),
    pytest.param(
        [run(0, failure_class="gremlins")],
        dq.IN_SET,
        "failure_class",
        ["gremlins"],
        id="unknown-failure-class",
    ),
    pytest.param([run(0, steps=-1)], dq.BETWEEN, "steps", [-1], id="negative-steps"),
    pytest.param(
        [run(0, ttfc_seconds=-2.0)], dq.BETWEEN, "ttfc_seconds", [-2.0], id="negative-ttfc"
    ),
    pytest.param(
        [excluded(0, exclusion_reason=None)],
        dq.NOT_NULL,
        "exclusion_reason",
        [None],
        id="exclusion-without-reason",
    ),
    pytest.param(
        [run(0, reward=None)], dq.NOT_NULL, "reward", [None], id="scored-run-without-reward"
    ),
    pytest.param(
        [run(0, excluded=None)],
        dq.NOT_NULL,
        "excluded",
        [None],
        id="neither-counted-nor-excluded",
    ),
    pytest.param(
        [run(0, success=None)], dq.NOT_NULL, "success", [None], id="scored-run-without-verdict"
    ),
]


@pytest.mark.parametrize(("rows", "expectation", "column", "unexpected"), BROKEN_SCORES)
def test_a_broken_run_scores_partition_fails_naming_the_expectation(
    rows, expectation, column, unexpected
):
    result = dq.validate("run_scores", scores(*GOOD_SCORES[1:], *rows))
    assert not result["success"]
    assert failures(result) == {(expectation, column)}
    (failure,) = result["failed"]
    assert failure["observed"]["unexpected_count"] == len(unexpected)
    assert failure["observed"]["partial_unexpected_list"] == unexpected
    assert failure["why"] == next(
        s["why"]
        for s in dq.SUITES["run_scores"]
        if (s["expectation"], s["column"]) == (expectation, column)
    )
    json.dumps(result, allow_nan=False)  # goes into Dagster metadata as it is


def test_a_run_without_a_failure_class_breaks_the_null_rate():
    result = dq.validate("run_scores", scores(*GOOD_SCORES, run(9, failure_class=None)))
    assert failures(result) == {(dq.NON_NULL_SHARE, "failure_class")}
    assert result["failed"][0]["observed"]["observed_value"] == pytest.approx(5 / 6)


KEY = "day, site, agent_version, slice_kind, slice_value"


BROKEN_KPIS = [
    pytest.param([kpi()], dq.COMPOUND_UNIQUE, KEY, id="duplicate-kpi-key"),
    pytest.param(
        [kpi(site="isar", success_ci_low=0.8)],
        dq.A_AT_LEAST_B,
        "success_rate, success_ci_low",
        id="ci-low-above-rate",
    ),
    pytest.param(
        [kpi(site="isar", success_ci_high=0.5)],
        dq.A_AT_LEAST_B,
        "success_ci_high, success_rate",
        id="ci-high-below-rate",
    ),
    pytest.param(
        [kpi(site="isar", successes=5)],
        dq.A_AT_LEAST_B,
        "n_scored, successes",
        id="successes-above-scored",
    ),
    pytest.param(
        [kpi(site="isar", n_scored=5)],
        dq.A_AT_LEAST_B,
        "n_runs, n_scored",
        id="scored-above-runs",
    ),
    pytest.param([kpi(site="isar", coverage=1.5)], dq.BETWEEN, "coverage", id="coverage-above-1"),
    pytest.param(
        [kpi(site="isar", n_runs=0, n_scored=0, successes=0)],
        dq.BETWEEN,
        "n_runs",
        id="row-without-runs",
    ),
    pytest.param([kpi(slice_value=None)], dq.NOT_NULL, "slice_value", id="null-slice"),
]


@pytest.mark.parametrize(("rows", "expectation", "column"), BROKEN_KPIS)
def test_a_broken_kpi_partition_fails_naming_the_expectation(rows, expectation, column):
    result = dq.validate("kpi_daily", kpis(*GOOD_KPIS, *rows))
    assert not result["success"]
    assert failures(result) == {(expectation, column)}
    (failure,) = result["failed"]
    assert failure["observed"]["unexpected_count"] >= 1
    assert failure["observed"]["rows"]  # the failing rows, by their key
    json.dumps(result, allow_nan=False)


def test_failures_come_in_the_suites_order_with_the_rows_that_broke_them():
    result = dq.validate("run_scores", scores(*GOOD_SCORES, run(0, reward=1.3), run(7, site=None)))
    assert [(f["expectation"], f["column"]) for f in result["failed"]] == [
        (dq.NOT_NULL, "site"),
        (dq.UNIQUE, "run_id"),
        (dq.BETWEEN, "reward"),
    ]
    assert result["failed"][0]["observed"]["rows"] == [{"run_id": "run-7"}]


def test_the_failure_class_set_is_the_taxonomy():
    from newsbench_dagster.core.scoring.failures import AgentFailure, EnvFailure

    assert set(dq.FAILURE_CLASSES) == {
        "success",
        "ambiguous",
        "no_answer_at_run",
        "task_missing",
        *EnvFailure,
        *AgentFailure,
    }


def test_a_partition_without_a_suite_column_fails_naming_it():
    result = dq.validate("run_scores", scores(*GOOD_SCORES).drop(columns=["reward"]))
    assert not result["success"]
    named = [f for f in result["failed"] if f["column"] == "reward"]
    assert named and all(
        f["observed"] == {"error": "the run_scores partition has no column reward"} for f in named
    )
