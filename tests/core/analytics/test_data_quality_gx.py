"""The contract of `data_quality.validate`: on every partition the suite tests use (valid ones,
each kind of broken row, several at once) it decides as Great Expectations does for the
expectation types the suites name, and reports what GX reports: which expectations failed,
their unexpected counts, share, first values and rows (tests/support/gx_reference.py runs the
same suites through GX itself)."""

from __future__ import annotations

import pytest

from newsbench_dagster.core.analytics import data_quality as dq
from tests.core.analytics.test_data_quality import (
    BROKEN_KPIS,
    BROKEN_SCORES,
    GOOD_KPIS,
    GOOD_SCORES,
    excluded,
    kpi,
    kpis,
    run,
    scores,
)
from tests.support import gx_reference

pytestmark = pytest.mark.heavy(10)  # Great Expectations imports in seconds, validates in ~1 s

# Every breakage the suite tests use, all in one partition per table (Great Expectations takes
# about 1 s per validation), beside the valid partitions and two broken every which way.
CASES = [
    pytest.param("run_scores", scores(*GOOD_SCORES), id="valid-scores"),
    pytest.param("kpi_daily", kpis(*GOOD_KPIS), id="valid-kpis"),
    pytest.param(
        "run_scores",
        scores(*GOOD_SCORES[1:], *(row for case in BROKEN_SCORES for row in case.values[0])),
        id="every-scores-breakage-at-once",
    ),
    pytest.param(
        "kpi_daily",
        kpis(*GOOD_KPIS, *(row for case in BROKEN_KPIS for row in case.values[0])),
        id="every-kpis-breakage-at-once",
    ),
    pytest.param(
        "run_scores",
        scores(
            *GOOD_SCORES,
            *(run(i, reward=1.5, steps=-i, failure_class=None) for i in range(5, 13)),
            run(5, site=None, success=None),
            excluded(40, exclusion_reason=None),
        ),
        id="many-failures-past-the-shown-five",
    ),
    pytest.param(
        "kpi_daily",
        kpis(
            *GOOD_KPIS,
            kpi(),
            kpi(site="isar", success_ci_low=0.9, successes=9, coverage=-0.5),
            kpi(site="isar", slice_value=None, n_scored=None, success_rate=None),
        ),
        id="kpis-broken-several-ways",
    ),
]


@pytest.mark.parametrize(("table", "df"), CASES)
def test_validate_decides_and_reports_as_great_expectations_does(table, df):
    ours, theirs = dq.validate(table, df), gx_reference.validate(table, df)
    assert [f["expectation"] + ": " + f["column"] for f in ours["failed"]] == [
        f["expectation"] + ": " + f["column"] for f in theirs["failed"]
    ]
    assert ours == theirs


def test_a_wrong_evaluator_is_caught_by_the_contract(monkeypatch):
    """The comparison above can fail: an evaluator that took bounds as exclusive would
    disagree with Great Expectations on a reward of exactly 1."""
    df = scores(*GOOD_SCORES[1:], run(0, reward=1.0))
    assert dq.validate("run_scores", df) == gx_reference.validate("run_scores", df)
    spec = next(s for s in dq.SUITES["run_scores"] if s["column"] == "reward")
    monkeypatch.setitem(spec["kwargs"], "max_value", 0.99)  # as if 1.0 were out of bounds
    assert not dq.validate("run_scores", df)["success"]
    monkeypatch.undo()
    assert dq.validate("run_scores", df)["success"]
