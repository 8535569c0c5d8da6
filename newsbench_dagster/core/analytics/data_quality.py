"""Data-quality gates: what a table's rows must satisfy before anyone downstream reads them.

The suites are data: per table, a list of expectations (a Great Expectations expectation
type, its column or columns, its arguments, an optional row condition) and the sentence that
says why it holds. `validate` evaluates a table's suite on one DataFrame (one partition) and
returns what failed, with what was observed, as Great Expectations reports it.

It does so in plain pandas, in milliseconds: the library itself took 5.7 s to import in every
process that checked a partition and about 1 s per partition to validate, a fifth of a
one-task site-day run. tests/core/analytics/test_data_quality_gx.py holds this evaluator to
Great Expectations (a dev dependency) on every partition the tests use, valid and broken.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from newsbench_dagster.core.scoring.failures import (
    AGENT_FAILURES,
    ENV_FAILURES,
    NOBODYS,
    SUCCESS,
)

# What `scoring.score_run` records as the reason (and class) of a run whose task is missing
# from `news_tasks`: an exclusion the scorer produces on purpose, so not a quality failure.
TASK_MISSING = "task_missing"
FAILURE_CLASSES = sorted({SUCCESS, TASK_MISSING, *NOBODYS, *AGENT_FAILURES, *ENV_FAILURES})

NOT_NULL = "expect_column_values_to_not_be_null"
UNIQUE = "expect_column_values_to_be_unique"
BETWEEN = "expect_column_values_to_be_between"
IN_SET = "expect_column_values_to_be_in_set"
NON_NULL_SHARE = "expect_column_proportion_of_non_null_values_to_be_between"
COMPOUND_UNIQUE = "expect_compound_columns_to_be_unique"
A_AT_LEAST_B = "expect_column_pair_values_a_to_be_greater_than_b"

SCORED = {"excluded": False}  # row condition: runs that count (not excluded)
EXCLUDED = {"excluded": True}

RUN_KEYS = ("run_id", "task_id", "site", "day", "agent_version")
SCORE_COLUMNS = ("accuracy", "timeliness", "efficiency", "reward")
KPI_KEYS = ("day", "site", "agent_version", "slice_kind", "slice_value")
RUN_COUNTS = (
    "steps",
    "tokens",
    "requests",
    "safety_incidents",
    "js_errors",
    "network_errors",
    "pii_flags",
)
KPI_RATES = (
    "success_rate",
    "success_ci_low",
    "success_ci_high",
    "mean_reward",
    "mean_accuracy",
    "mean_timeliness",
    "mean_efficiency",
    "js_error_rate",
    "network_error_rate",
    "pii_flag_rate",
)
# Columns that name a failing row in a report.
ROW_IDS = {"run_scores": ("run_id",), "kpi_daily": KPI_KEYS}


def _e(expectation: str, column: str | list[str], why: str, **kwargs: Any) -> dict:
    """One expectation as data. `column` is a column name, or the columns of a multi-column
    expectation (for a column pair: A, then B); `where` is an equality row condition."""
    where = kwargs.pop("where", None)
    spec = {"expectation": expectation, "column": column, "kwargs": kwargs, "why": why}
    return {**spec, "where": where} if where else spec


SUITES: dict[str, list[dict]] = {
    "run_scores": [
        *(
            _e(
                NOT_NULL,
                c,
                f"Every score is traced to its {c}: without it, it cannot be joined, "
                "sliced or counted.",
            )
            for c in RUN_KEYS
        ),
        _e(UNIQUE, "run_id", "One score per run: a duplicate run counts twice in every KPI."),
        *(
            _e(
                BETWEEN,
                c,
                f"{c} is a score in [0, 1]; excluded runs have none.",
                min_value=0,
                max_value=1,
            )
            for c in SCORE_COLUMNS
        ),
        *(
            _e(NOT_NULL, c, f"A run that is not excluded was scored: its {c} is set.", where=SCORED)
            for c in SCORE_COLUMNS
        ),
        _e(NOT_NULL, "excluded", "Every run is either counted or excluded, never unknown."),
        _e(
            NOT_NULL,
            "success",
            "A counted run either succeeded or not (excluded runs have no verdict, on purpose).",
            where=SCORED,
        ),
        _e(
            NOT_NULL,
            "exclusion_reason",
            "An excluded run says why, or nobody can tell an "
            "environment failure from a harness bug.",
            where=EXCLUDED,
        ),
        _e(
            NON_NULL_SHARE,
            "failure_class",
            "Every run ends in exactly one class (success, an "
            "agent failure or an environment failure): null rate 0.",
            min_value=1.0,
        ),
        _e(
            IN_SET,
            "failure_class",
            "Failure classes come from the taxonomy (core.scoring.failures: agent and "
            "environment failures, ambiguous, no_answer_at_run; task_missing); anything else "
            "falls out of every failure report.",
            value_set=FAILURE_CLASSES,
        ),
        *(_e(BETWEEN, c, f"{c} is a count: never negative.", min_value=0) for c in RUN_COUNTS),
        _e(BETWEEN, "page_load_ms", "A page load time is a duration: never negative.", min_value=0),
        _e(
            BETWEEN,
            "ttfc_seconds",
            "Time to first correct answer is measured from the start of the run: never negative.",
            min_value=0,
        ),
    ],
    "kpi_daily": [
        *(
            _e(NOT_NULL, c, f"A KPI row is addressed by {', '.join(KPI_KEYS)}; {c} is part of it.")
            for c in KPI_KEYS
        ),
        _e(
            COMPOUND_UNIQUE,
            list(KPI_KEYS),
            "One row per day, site, agent version and slice: a "
            "duplicate doubles the slice in every dashboard.",
        ),
        *(
            _e(BETWEEN, c, f"{c} is a share in [0, 1].", min_value=0, max_value=1)
            for c in KPI_RATES
        ),
        _e(
            BETWEEN,
            "coverage",
            "Coverage is tasks run over tasks generated, in [0, 1]: above "
            "1, runs were scored on tasks that day's news_tasks does not hold.",
            min_value=0,
            max_value=1,
        ),
        _e(
            BETWEEN,
            "drift_sensitivity",
            "Drift sensitivity is a difference of two success rates: in [-1, 1].",
            min_value=-1,
            max_value=1,
        ),
        _e(
            A_AT_LEAST_B,
            ["success_rate", "success_ci_low"],
            "The Wilson interval contains the observed rate: success_ci_low <= success_rate.",
            or_equal=True,
            ignore_row_if="either_value_is_missing",
        ),
        _e(
            A_AT_LEAST_B,
            ["success_ci_high", "success_rate"],
            "The Wilson interval contains the observed rate: success_rate <= success_ci_high.",
            or_equal=True,
            ignore_row_if="either_value_is_missing",
        ),
        _e(
            A_AT_LEAST_B,
            ["n_runs", "n_scored"],
            "Scored runs are a subset of the runs: n_scored <= n_runs.",
            or_equal=True,
            ignore_row_if="either_value_is_missing",
        ),
        _e(
            A_AT_LEAST_B,
            ["n_scored", "successes"],
            "Successes are a subset of the scored runs: successes <= n_scored.",
            or_equal=True,
            ignore_row_if="either_value_is_missing",
        ),
        _e(BETWEEN, "n_runs", "A KPI row exists only where runs exist: n_runs >= 1.", min_value=1),
    ],
}

_PARTIAL = 5  # unexpected values shown per failure


def _display_column(column: str | list[str]) -> str:
    return column if isinstance(column, str) else ", ".join(column)


def _scalar(value: Any) -> Any:
    if _missing(value):
        return None
    return value.item() if hasattr(value, "item") else value


def _plain(value: Any) -> Any:
    """JSON-safe: missing values as null, numpy scalars as Python ones, timestamps as text."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return json.loads(json.dumps(_scalar(value), default=str))


def _where(df: pd.DataFrame, where: dict | None) -> pd.DataFrame:
    """The rows an equality row condition selects; a missing value never equals anything."""
    if not where:
        return df
    keep = pd.Series(True, index=df.index)
    for column, value in where.items():
        keep &= df[column].map(lambda x, v=value: not _missing(x) and bool(x == v))
    return df[keep]


def _missing(value: Any) -> bool:
    return value is None or (not isinstance(value, list | tuple | dict) and bool(pd.isna(value)))


def _unexpected(spec: dict, rows: pd.DataFrame) -> tuple[pd.Series, pd.Series, Any]:
    """(rows considered, rows unexpected among them, each unexpected row's value) for a
    row-by-row expectation; the semantics of the Great Expectations expectation it names
    (held against Great Expectations itself in tests/core/analytics/test_data_quality_gx.py)."""
    kind, column, kw = spec["expectation"], spec["column"], spec["kwargs"]
    if kind == COMPOUND_UNIQUE:
        considered = ~rows[column].isna().all(axis=1)  # ignore_row_if all_values_are_missing
        dup = rows[considered].duplicated(subset=column, keep=False)
        bad = considered & dup.reindex(rows.index, fill_value=False)
        values = [dict(zip(column, r, strict=True)) for r in rows[bad][column].itertuples(False)]
        return considered, bad, values
    if kind == A_AT_LEAST_B:
        a, b = rows[column[0]], rows[column[1]]
        considered = ~(a.isna() | b.isna())  # ignore_row_if either_value_is_missing
        a, b = a[considered], b[considered]
        held = a >= b if kw.get("or_equal") else a > b
        bad = considered & ~held.reindex(rows.index, fill_value=True)
        pairs = rows.loc[bad, list(column)].itertuples(index=False)
        return considered, bad, [list(pair) for pair in pairs]
    values = rows[column]
    if kind == NOT_NULL:
        bad = values.isna()
        return pd.Series(True, index=rows.index), bad, list(values[bad])
    considered = ~values.isna()  # the other column expectations skip missing values
    present = values[considered]
    if kind == UNIQUE:
        failing = present.duplicated(keep=False)
    elif kind == IN_SET:
        failing = ~present.isin(kw["value_set"])
    elif kind == BETWEEN:
        failing = pd.Series(False, index=present.index)
        if kw.get("min_value") is not None:
            failing |= present < kw["min_value"]
        if kw.get("max_value") is not None:
            failing |= present > kw["max_value"]
    else:
        raise ValueError(f"data quality: no evaluator for expectation {kind!r}")
    bad = considered & failing.reindex(rows.index, fill_value=False)
    return considered, bad, list(values[bad])


def _check(spec: dict, df: pd.DataFrame, table: str) -> dict | None:
    """What a failing expectation observed (its counts, first values and rows), None when it
    holds."""
    columns = [spec["column"]] if isinstance(spec["column"], str) else list(spec["column"])
    gone = [c for c in columns if c not in df.columns]
    if gone:
        return {"error": f"the {table} partition has no column {', '.join(gone)}"}
    rows = _where(df, spec.get("where"))
    kw = spec["kwargs"]
    if spec["expectation"] == NON_NULL_SHARE:
        share = float(rows[spec["column"]].notna().mean()) if len(rows) else None
        low, high = kw.get("min_value"), kw.get("max_value")
        below = share is not None and low is not None and share < low
        above = share is not None and high is not None and share > high
        return _plain({"observed_value": share}) if share is None or below or above else None
    considered, bad, values = _unexpected(spec, rows)
    count = int(bad.sum())
    if not count:
        return None
    out = {
        "element_count": len(rows),
        "unexpected_count": count,
        "unexpected_percent": count / max(int(considered.sum()), 1) * 100,
        "partial_unexpected_list": values[:_PARTIAL],
    }
    ids = rows.loc[bad[bad].index[:_PARTIAL], list(ROW_IDS[table])].to_dict("records")
    return _plain({**out, "rows": ids})


def validate(table: str, df: pd.DataFrame) -> dict:
    """Run the table's suite on one frame: {"success", "evaluated", "failed": [{expectation,
    column, why, observed}]}. An empty frame has nothing to check: it passes, `empty` says so."""
    specs = SUITES[table]
    if df.empty:
        return {"success": True, "evaluated": 0, "empty": True, "failed": []}
    failed = []
    for spec in specs:  # in the suite's order
        observed = _check(spec, df, table)
        if observed is not None:
            failed.append(
                {
                    "expectation": spec["expectation"],
                    "column": _display_column(spec["column"]),
                    "why": spec["why"],
                    "observed": observed,
                }
            )
    return {"success": not failed, "evaluated": len(specs), "empty": False, "failed": failed}


def _cell(value: object, width: int = 80) -> str:
    text = "" if value in (None, [], "") else str(value)
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def failures_markdown(failed: list[dict]) -> str:
    """Markdown: one row per failed expectation, with what was unexpected and where."""
    lines = [
        "| expectation | column | unexpected | values | rows |",
        "|---|---|---|---|---|",
    ]
    for f in failed:
        seen = f["observed"]
        if "error" in seen:
            unexpected, values = "error", seen["error"]
        elif "unexpected_count" in seen:
            unexpected = f"{seen['unexpected_count']} ({seen.get('unexpected_percent') or 0:.1f} %)"
            values = seen.get("partial_unexpected_list")
        else:
            unexpected, values = "observed", seen.get("observed_value")
        lines.append(
            f"| {f['expectation']} | {f['column']} | {unexpected} | {_cell(values)} | "
            f"{_cell(seen.get('rows'))} |"
        )
    return "\n".join(lines)


def summary(outcome: dict, rows: int) -> str:
    """One line a gate shows: nothing to check, the first failure, or that all held."""
    failed = outcome["failed"]
    if outcome["empty"]:
        return "Empty partition: nothing to check."
    if failed:
        first = failed[0]
        return (
            f"{len(failed)} of {outcome['evaluated']} expectations failed; first: "
            f"{first['expectation']} on {first['column']} ({first['why']})"
        )
    return f"All {outcome['evaluated']} expectations hold on {rows} rows."
