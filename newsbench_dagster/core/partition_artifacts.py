"""A partition's artifacts are written by attempt and swapped with its rows.

Each attempt at a partition (a Dagster run) writes its artifacts in a folder of its own,
`runs/{site}/{day}/attempt-{id}/{run_id}/...` (the runs' artifacts, `agent_runs`) and
`feeds/{site}/{day}/attempt-{id}/` (the bytes of the feeds read, `feed_items`), beside the
folders of earlier attempts, and its rows point there. The warehouse replaces the partition's
rows in one transaction: until it commits, the rows and folders of the previous attempt are
untouched (a killed attempt writes nothing over them); once it has, `sweep` removes the
partition's other attempts' folders, the previous one and any a killed attempt left, except
those of attempts still running.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from newsbench_dagster.core.artifacts import ArtifactStore, LocalArtifactStore

ATTEMPT = "attempt-"
# The output metadata by which an asset tells the warehouse where it wrote this attempt's
# artifacts: {"store": root, "folder": the partition's folder, "attempt": id}.
ARTIFACT_ATTEMPT = "artifacts_attempt"


def attempt_folder(attempt_id: str) -> str:
    return f"{ATTEMPT}{attempt_id}"


def runs_folder(site: str, day: object) -> str:
    """The partition's folder of run artifacts (`core.harness.capture.artifact_key`)."""
    return f"runs/{site}/{day}"


def feeds_folder(site: str, day: object) -> str:
    """The partition's folder of the feeds' bytes (`core.tasks.poll`)."""
    return f"feeds/{site}/{day}"


def _attempts(store: ArtifactStore, folder: str) -> dict[str, str]:
    """Attempt id -> its folder's path in the store, for the attempt folders under `folder`."""
    if isinstance(store, LocalArtifactStore):
        base = Path(store.root) / folder
        names = [p.name for p in base.iterdir() if p.is_dir()] if base.is_dir() else []
        paths = {n: str(base / n) for n in names}
    else:  # an fsspec store (object storage)
        base = f"{store.root}/{folder}"
        try:
            listed = store.fs.ls(base, detail=False)
        except FileNotFoundError:
            listed = []
        paths = {p.rstrip("/").rsplit("/", 1)[-1]: p for p in listed}
    return {n[len(ATTEMPT) :]: p for n, p in paths.items() if n.startswith(ATTEMPT)}


def _remove(store: ArtifactStore, path: str) -> None:
    if isinstance(store, LocalArtifactStore):
        shutil.rmtree(path, ignore_errors=True)
    else:
        store.fs.rm(path, recursive=True)


def sweep(
    store: ArtifactStore, folder: str, keep: str, running: Callable[[str], bool]
) -> list[str]:
    """Remove the attempt folders under `folder` but `keep`'s and those of attempts that are
    `running`; the ids of the attempts removed."""
    removed = []
    for attempt, path in sorted(_attempts(store, folder).items()):
        if attempt == keep or running(attempt):
            continue
        _remove(store, path)
        removed.append(attempt)
    return removed
