"""A partition's artifact folders by attempt: after a commit, the other attempts' folders go,
except a running attempt's; what is not an attempt's folder is never touched."""

from __future__ import annotations

import uuid

import pytest

from newsbench_dagster.core.artifacts import artifact_store
from newsbench_dagster.core.partition_artifacts import attempt_folder, runs_folder, sweep


@pytest.fixture(params=["folder", "memory"])
def store(request, tmp_path):
    root = str(tmp_path / "art") if request.param == "folder" else f"memory://{uuid.uuid4().hex}"
    return artifact_store(root)


def _write(store, folder: str, attempt: str | None, run: str) -> str:
    within = f"{attempt_folder(attempt)}/" if attempt else ""
    return store.put(f"{folder}/{within}{run}/run.json", b"{}")


def test_the_committed_attempt_and_running_ones_stay_the_others_go(store):
    folder = runs_folder("harbor", "2026-12-04")
    kept = _write(store, folder, "new", "r-1")
    running = _write(store, folder, "still-running", "r-1")
    gone = [_write(store, folder, "previous", "r-1"), _write(store, folder, "killed", "r-2")]
    cli_run = _write(store, folder, None, "r-3")  # `agents try`: not an attempt's
    other_day = _write(store, runs_folder("harbor", "2026-12-03"), "previous", "r-1")

    removed = sweep(store, folder, keep="new", running=lambda a: a == "still-running")

    assert sorted(removed) == ["killed", "previous"]
    for uri in (kept, running, cli_run, other_day):
        assert store.get(uri) == b"{}"
    for uri in gone:
        with pytest.raises((FileNotFoundError, ValueError, OSError)):
            store.get(uri)
    assert sweep(store, folder, keep="new", running=lambda a: False) == ["still-running"]
    assert sweep(store, runs_folder("lac", "2026-12-04"), keep="x", running=bool) == []
