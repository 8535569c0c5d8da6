from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from newsbench_dagster.core.analytics.kpis import ALL, rollup
from newsbench_dagster.core.analytics.stats import wilson
from newsbench_dagster.core.analytics.tables import frame, records
from newsbench_dagster.core.scoring.reward import efficiency, reward, timeliness


def test_wilson_interval_known_values():
    lo, hi = wilson(9, 10)
    assert lo == pytest.approx(0.5958, abs=1e-3) and hi == pytest.approx(0.9821, abs=1e-3)
    assert wilson(0, 0) == (None, None)
    lo, hi = wilson(0, 5)
    assert lo == 0.0 and 0.4 < hi < 0.5


def test_reward_components():
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    assert timeliness(0, now, now) == pytest.approx(1.0)
    assert timeliness(60, now - timedelta(minutes=30), now) == pytest.approx(0.25, abs=1e-3)
    assert timeliness(None, None, now) == pytest.approx(0.25)
    assert efficiency(0, 0, 0) == 1.0 and efficiency(30, 50_000, 60) == 0.0
    # The token cap a real model was measured against (README "A local model"): 5,000 tokens
    # of a model run cost a tenth of the token part, not all of it.
    assert efficiency(0, 5_000, 0) == pytest.approx(1 - 0.4 * 0.1)
    assert reward(1, 1, 1) == pytest.approx(1.0)
    assert reward(1, 0, 0, {"accuracy_weight": 0.5}) == 0.5


def _score(site, success, excluded=False, intent="find_top_headline", ttfc=1.0):
    return {
        "run_id": f"r{site}{success}{excluded}{intent}{ttfc}",
        "task_id": f"t-{site}{intent}",
        "site": site,
        "day": datetime(2026, 11, 30),
        "intent": intent,
        "agent_version": "a@1",
        "success": None if excluded else success,
        "excluded": excluded,
        "failure_class": "site_down" if excluded else ("success" if success else "wrong_target"),
        "reward": None if excluded else 0.5,
        "ttfc_seconds": ttfc if success else None,
        "steps": 3,
        "tokens": 0,
        "safety_incidents": 0,
        "claim_mismatch": False,
    }


def test_rollup_excludes_environment_failures():
    scores = frame(
        "run_scores",
        [
            _score("a", True),
            _score("a", False, intent="x", ttfc=2),
            _score("b", True, excluded=True),
        ],
    )
    rows = rollup(records(scores, "run_scores") and scores, {"a": 2, "b": 1})
    overall = next(r for r in rows if r["site"] == ALL and r["slice_kind"] == "all")
    assert overall["n_runs"] == 3 and overall["n_scored"] == 2
    assert overall["n_env_failures"] == 1 and overall["success_rate"] == 0.5
    assert overall["failure_taxonomy"] == {"site_down": 1, "success": 1, "wrong_target": 1}
    b = next(r for r in rows if r["site"] == "b" and r["slice_kind"] == "all")
    assert b["success_rate"] is None and b["n_env_failures"] == 1
    assert {r["slice_value"] for r in rows if r["slice_kind"] == "intent"} == {
        "find_top_headline",
        "x",
    }
    assert rollup(pd.DataFrame(), {}) == []


def test_frame_has_declared_columns_even_when_empty():
    df = frame("agent_runs", [])
    assert list(df.columns)[:3] == ["run_id", "task_id", "site"]
    assert str(df["day"].dtype).startswith("datetime64")


def _full(site, success, *, excluded=False, **extra):
    """A run_scores row with the slice and page columns (defaults: a scored desktop run)."""
    return {
        **_score(site, success, excluded=excluded),
        "run_id": f"r-{site}-{next(_IDS)}",
        "accuracy": None if excluded else (1.0 if success else 0.5),
        "timeliness": None if excluded else (0.8 if success else 0.2),
        "efficiency": None if excluded else 0.6,
        "device": "desktop",
        "geo": "us",
        "network": "wifi",
        "locale": "en-US",
        "risk_tier": "low",
        "tool_calls": {"goto": 1, "answer": 1},
        "js_errors": 0,
        "network_errors": 0,
        "page_load_ms": 100.0,
        "pii_flags": 0,
        **extra,
    }


_IDS = itertools.count()


def _full_rows():
    return [
        # site a: two successes, one failure, one environment failure
        _full("a", True, steps=2, tokens=100, tool_calls={"goto": 2, "click": 1, "answer": 1}),
        _full("a", True, steps=4, tokens=300, device="phone", page_load_ms=300.0, js_errors=2),
        _full(
            "a",
            False,
            steps=10,
            tokens=900,
            device="phone",
            geo=None,
            network_errors=1,
            pii_flags=2,
            risk_tier="high",
            tool_calls={"click": 5},
        ),
        _full(
            "a",
            None,
            excluded=True,
            steps=20,
            tokens=5000,
            device="phone",
            js_errors=1,
            network_errors=3,
            page_load_ms=None,
            pii_flags=1,
            tool_calls={"goto": 1},
        ),
        # site b: one failure only
        _full("b", False, steps=7, tokens=70, locale="de-DE", geo="eu", tool_calls={}),
    ]


def _pick(rows, site, kind="all", value=ALL):
    key = (site, kind, value)
    return next(r for r in rows if (r["site"], r["slice_kind"], r["slice_value"]) == key)


def test_rollup_fills_the_full_kpi_list():
    rows = rollup(frame("run_scores", _full_rows()), {"a": 4, "b": 1})
    a = _pick(rows, "a")
    assert a["n_runs"] == 4 and a["n_scored"] == 3 and a["successes"] == 2
    # Reward components: means over the scored runs only.
    assert a["mean_accuracy"] == pytest.approx((1 + 1 + 0.5) / 3)
    assert a["mean_timeliness"] == pytest.approx((0.8 + 0.8 + 0.2) / 3)
    assert a["mean_efficiency"] == pytest.approx(0.6)
    # Cost per success: the successes' steps and tokens, not the failure's nor the excluded's.
    assert a["steps_per_success"] == 3.0 and a["tokens_per_success"] == 200.0
    assert a["mean_steps"] == pytest.approx(16 / 3)  # unchanged: every scored run
    # Tool-call mix over every run of the group, the excluded one too: 4 goto, 6 click and
    # 2 answer of 12 calls.
    assert a["tool_call_mix"] == {"answer": 0.1667, "click": 0.5, "goto": 0.3333}
    assert sum(a["tool_call_mix"].values()) == pytest.approx(1.0, abs=1e-3)
    # Page measures count the excluded run too (it measures the pages).
    assert a["page_load_p50_ms"] == 100.0  # median of 100, 300, 100 (the NULL skipped)
    assert a["js_error_rate"] == 0.5  # 2 of 4 runs
    assert a["network_error_rate"] == 0.5  # the failure and the excluded run
    # PII: share of the scored runs (the excluded run's flag does not count).
    assert a["pii_flag_rate"] == pytest.approx(1 / 3)
    assert a["drift_sensitivity"] is None  # no drift given

    b = _pick(rows, "b")
    assert b["steps_per_success"] is None and b["tokens_per_success"] is None
    assert b["tool_call_mix"] is None  # no call recorded
    assert b["js_error_rate"] == 0.0 and b["pii_flag_rate"] == 0.0

    everything = _pick(rows, ALL)
    assert everything["n_runs"] == 5 and everything["steps_per_success"] == 3.0
    assert everything["page_load_p50_ms"] == 100.0


def test_rollup_slices_by_profile_and_risk():
    rows = rollup(frame("run_scores", _full_rows()), {"a": 4, "b": 1})
    kinds = {r["slice_kind"] for r in rows}
    assert kinds == {"all", "intent", "device", "geo", "network", "locale", "risk_tier"}

    def values(site, kind):
        return {r["slice_value"]: r for r in rows if r["site"] == site and r["slice_kind"] == kind}

    devices = values("a", "device")
    assert set(devices) == {"desktop", "phone"}
    assert devices["phone"]["n_runs"] == 3 and devices["phone"]["n_scored"] == 2
    assert devices["phone"]["successes"] == 1 and devices["phone"]["success_rate"] == 0.5
    assert devices["desktop"]["tool_call_mix"] == {"answer": 0.25, "click": 0.25, "goto": 0.5}
    assert devices["phone"]["tasks_generated"] is None  # coverage only on `all` rows
    assert set(values("a", "geo")) == {"us"}  # the run without a geo has no geo row
    assert values("a", "geo")["us"]["n_runs"] == 3
    assert set(values(ALL, "geo")) == {"eu", "us"}
    assert set(values(ALL, "locale")) == {"de-DE", "en-US"}
    assert values(ALL, "locale")["de-DE"]["n_runs"] == 1
    risk = values("a", "risk_tier")
    assert risk["high"]["n_runs"] == 1 and risk["high"]["pii_flag_rate"] == 1.0
    assert risk["low"]["n_runs"] == 3 and risk["low"]["n_env_failures"] == 1
    assert set(values("b", "network")) == {"wifi"}


def test_drift_sensitivity_per_site_and_overall():
    rows = rollup(frame("run_scores", _full_rows()), {"a": 4}, drift={"a": -0.4, "c": 0.1})
    assert _pick(rows, "a")["drift_sensitivity"] == -0.4
    assert _pick(rows, "a", "device", "phone")["drift_sensitivity"] == -0.4
    assert _pick(rows, "b")["drift_sensitivity"] is None  # not in the drift table
    assert _pick(rows, ALL)["drift_sensitivity"] == pytest.approx(-0.15)  # mean of a and c
    rows = rollup(frame("run_scores", _full_rows()), {}, drift={"b": None})
    assert _pick(rows, ALL)["drift_sensitivity"] is None


def test_rollup_reads_rows_written_before_the_new_columns():
    new = {
        "suite",
        "device",
        "geo",
        "network",
        "locale",
        "risk_tier",
        "tool_calls",
        "js_errors",
        "network_errors",
        "page_load_ms",
        "pii_flags",
        "accuracy",
        "timeliness",
        "efficiency",
    }
    full = frame("run_scores", _full_rows())
    old = full.drop(columns=[c for c in full.columns if c in new])
    rows = rollup(old, {"a": 4, "b": 1})
    assert {r["slice_kind"] for r in rows} == {"all", "intent"}
    a = _pick(rows, "a")
    assert a["success_rate"] == pytest.approx(2 / 3) and a["steps_per_success"] == 3.0
    for col in (
        "mean_accuracy",
        "tool_call_mix",
        "page_load_p50_ms",
        "js_error_rate",
        "network_error_rate",
        "pii_flag_rate",
    ):
        assert a[col] is None, col
    # NULLs in present columns (a warehouse evolved by ALTER TABLE) read the same way.
    nulls = frame("run_scores", [_score("a", True), _score("a", False)])
    a = _pick(rollup(nulls, {"a": 2}), "a")
    assert a["js_error_rate"] is None and a["tool_call_mix"] is None
    assert a["page_load_p50_ms"] is None and a["mean_accuracy"] is None
    assert {r["slice_kind"] for r in rollup(nulls, {"a": 2})} == {"all", "intent"}


def test_kpi_rows_fit_the_table():
    rows = rollup(frame("run_scores", _full_rows()), {"a": 4, "b": 1}, drift={"a": -0.4})
    df = frame("kpi_daily", [{**r, "day": datetime(2026, 11, 30)} for r in rows])
    back = records(df, "kpi_daily")
    a = next(r for r in back if r["site"] == "a" and r["slice_kind"] == "all")
    assert a["tool_call_mix"]["click"] == 0.5 and a["drift_sensitivity"] == -0.4
