from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from newsbench_dagster.core.kpis import ALL, rollup, wilson
from newsbench_dagster.core.reward import efficiency, reward, timeliness
from newsbench_dagster.core.tables import frame, records


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
    assert efficiency(0, 0, 0) == 1.0 and efficiency(30, 5000, 60) == 0.0
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
