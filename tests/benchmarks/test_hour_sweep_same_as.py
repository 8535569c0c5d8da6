"""`hour_sweep.py --same-as`: the clock-dependent reward parts of two sweeps at the same
instants are compared run by run, and a part that moved is named (the check the sweep's
--check exits 1 on). The sweep itself runs in test_benchmark_smoke."""

from __future__ import annotations

import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _sweep_module(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module("hour_sweep")


def _run(task: str, **parts) -> dict:
    base = {"at": "2026-11-30T00:00:00+00:00", "site": "harbor", "intent": "find_top_headline"}
    return {**base, "task_id": task, "accuracy": 1.0, "freshness": 0.49, "age_minutes": 30.9,
            "ttfc": 0.97, "reward": 0.91, **parts}  # fmt: skip


def test_only_a_moved_world_part_is_reported(monkeypatch):
    same_world_parts = _sweep_module(monkeypatch).same_world_parts
    earlier = [_run("a"), _run("b"), _run("c")]
    # The agent's own speed (ttfc, and so the reward) may differ; the task only in one sweep
    # is not compared.
    now = [_run("a", ttfc=0.96, reward=0.9095), _run("b"), _run("d", freshness=0.1)]
    assert same_world_parts(now, earlier) == []
    # Freshness measured against the wall clock: the story aged between the sweeps.
    now[1] = _run("b", freshness=0.0, age_minutes=10110.9)
    assert same_world_parts(now, earlier) == [
        "2026-11-30T00:00:00+00:00 harbor find_top_headline b freshness: 0.49 then 0.0",
        "2026-11-30T00:00:00+00:00 harbor find_top_headline b age_minutes: 30.9 then 10110.9",
    ]
