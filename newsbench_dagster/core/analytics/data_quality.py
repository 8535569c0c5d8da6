"""Data-quality gates: what a table's rows must satisfy before anyone downstream reads them.

The suites are data: per table, a list of expectations (a Great Expectations expectation
type, its column or columns, its arguments, an optional row condition) and the sentence that
says why it holds. `validate` runs a table's suite through Great Expectations on one DataFrame
(one partition) and returns what failed, with what was observed.

Great Expectations is imported inside `validate` (its import takes seconds), so importing this
module stays cheap; the suites can be read and listed without it.
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
# Columns that name a failing row in a report (from GX's index of unexpected rows).
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

_MULTI = {COMPOUND_UNIQUE: "column_list", A_AT_LEAST_B: ("column_A", "column_B")}
_PARTIAL = 5  # unexpected values shown per failure


def _column_kwargs(spec: dict) -> dict:
    key = _MULTI.get(spec["expectation"])
    if key is None:
        return {"column": spec["column"]}
    if isinstance(key, tuple):
        return dict(zip(key, spec["column"], strict=True))
    return {key: list(spec["column"])}


def _class_name(expectation: str) -> str:
    # expect_column_values_to_be_between -> ExpectColumnValuesToBeBetween
    return "".join(part.capitalize() for part in expectation.split("_"))


def build_suite(table: str):
    """The table's suite as a Great Expectations `ExpectationSuite` (imports GX)."""
    import great_expectations as gx
    from great_expectations.expectations.row_conditions import Column

    expectations = []
    for i, spec in enumerate(SUITES[table]):
        kwargs = {**_column_kwargs(spec), **spec["kwargs"]}
        if spec.get("where"):
            conditions = [Column(c) == v for c, v in spec["where"].items()]
            condition = conditions[0]
            for other in conditions[1:]:
                condition = condition & other
            kwargs["row_condition"] = condition
        cls = getattr(gx.expectations, _class_name(spec["expectation"]))
        expectations.append(cls(**kwargs, meta={"index": i}))
    return gx.ExpectationSuite(name=f"newsbench.{table}", expectations=expectations)


def _display_column(column: str | list[str]) -> str:
    return column if isinstance(column, str) else ", ".join(column)


def _scalar(value: Any) -> Any:
    if value is None or (not isinstance(value, list | tuple | dict) and pd.isna(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def _plain(value: Any) -> Any:
    """JSON-safe: missing values as null, numpy scalars as Python ones, timestamps as text."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return json.loads(json.dumps(_scalar(value), default=str))


def _rows(df: pd.DataFrame, table: str, index: Any) -> list[dict]:
    """The identifying columns of the first unexpected rows, when GX says which rows."""
    labels = [i for i in (index or []) if not isinstance(i, dict) and i in df.index]
    return df.loc[labels[:_PARTIAL], list(ROW_IDS[table])].to_dict("records")


def _observed(result: Any, df: pd.DataFrame, table: str) -> dict:
    info = result.exception_info or {}
    if info.get("raised_exception"):
        return {"error": info.get("exception_message")}
    res = result.result or {}
    out = {
        k: res[k]
        for k in ("element_count", "unexpected_count", "unexpected_percent", "observed_value")
        if k in res
    }
    if "partial_unexpected_list" in res:
        out["partial_unexpected_list"] = list(res["partial_unexpected_list"] or [])[:_PARTIAL]
    rows = _rows(df, table, res.get("partial_unexpected_index_list"))
    if rows:
        out["rows"] = rows
    return _plain(out)


def validate(table: str, df: pd.DataFrame) -> dict:
    """Run the table's suite on one frame: {"success", "evaluated", "failed": [{expectation,
    column, why, observed}]}. An empty frame has nothing to check: it passes, `empty` says so."""
    specs = SUITES[table]
    if df.empty:
        return {"success": True, "evaluated": 0, "empty": True, "failed": []}

    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    # In memory, nothing kept: no docs site, no usage statistics, no progress bars on stderr.
    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
    )
    context = gx.get_context(project_config=config, mode="ephemeral")
    batch = (
        context.data_sources.add_pandas("newsbench")
        .add_dataframe_asset(table)
        .add_batch_definition_whole_dataframe("partition")
        .get_batch(batch_parameters={"dataframe": df})
    )
    outcome = batch.validate(build_suite(table), result_format="SUMMARY")
    failed = []
    for result in outcome.results:
        if not result.success:
            index = result.expectation_config.meta["index"]
            failed.append((index, specs[index], _observed(result, df, table)))
    failed = [
        {
            "expectation": spec["expectation"],
            "column": _display_column(spec["column"]),
            "why": spec["why"],
            "observed": observed,
        }
        for _, spec, observed in sorted(failed, key=lambda f: f[0])  # in the suite's order
    ]
    return {
        "success": not failed,
        "evaluated": len(outcome.results),
        "empty": False,
        "failed": failed,
    }


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
