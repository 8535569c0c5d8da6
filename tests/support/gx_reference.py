"""The data-quality suites run by Great Expectations itself: the reference that
`core.analytics.data_quality.validate` (plain pandas, milliseconds) is held to.

The suites name Great Expectations expectation types; the product evaluates them without the
library, whose import took 5.7 s in every process that checked a partition and whose
validation took about 1 s per partition. This module is the library's verdict on the same
frames, in the shape `validate` returns, for tests/core/analytics/test_data_quality_gx.py."""

from __future__ import annotations

from typing import Any

import pandas as pd

from newsbench_dagster.core.analytics.data_quality import (
    _PARTIAL,
    A_AT_LEAST_B,
    COMPOUND_UNIQUE,
    ROW_IDS,
    SUITES,
    _display_column,
    _plain,
)

_MULTI = {COMPOUND_UNIQUE: "column_list", A_AT_LEAST_B: ("column_A", "column_B")}


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
    """The table's suite as a Great Expectations `ExpectationSuite`."""
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


def _rows(df: pd.DataFrame, table: str, index: Any) -> list[dict]:
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
    """`data_quality.validate`'s result, as Great Expectations decides it."""
    specs = SUITES[table]
    if df.empty:
        return {"success": True, "evaluated": 0, "empty": True, "failed": []}

    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

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
        for _, spec, observed in sorted(failed, key=lambda f: f[0])
    ]
    return {
        "success": not failed,
        "evaluated": len(outcome.results),
        "empty": False,
        "failed": failed,
    }
