"""Samples of tasks: the PR-sized sample and the nightly full set.

A PR-sized sample is stratified by (site, intent, language): every stratum present in the pool
gets its share, rounded so the sizes add up to n, and at least one task while n allows.
Within a stratum tasks are drawn by a seeded hash of their id, so the same pool and seed give
the same sample in any process and order, and a task stays in the sample when others are
added to the pool (what a PR's before/after comparison needs).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Stratum = tuple[str, str, str]


@dataclass(frozen=True)
class Sample:
    seed: int
    n: int
    task_ids: tuple[str, ...]
    strata: dict[Stratum, int]  # tasks drawn per (site, intent, language)

    def as_dict(self) -> dict:
        """What an evaluation stores with its results, to be reproduced exactly."""
        return {
            "seed": self.seed,
            "n": self.n,
            "task_ids": list(self.task_ids),
            "strata": {"|".join(k): v for k, v in sorted(self.strata.items())},
        }


def stratum(task: dict) -> Stratum:
    language = (task.get("constraints") or {}).get("language") or "?"
    return (task["site"], task["intent"], language)


def _rank(seed: int, task_id: str) -> str:
    return hashlib.sha256(f"{seed}|{task_id}".encode()).hexdigest()


def _shares(sizes: dict[Stratum, int], n: int) -> dict[Stratum, int]:
    """Largest-remainder apportionment of n over the strata, each first given one task."""
    total = sum(sizes.values())
    if n >= total:
        return dict(sizes)
    keys = sorted(sizes)
    give = dict.fromkeys(keys, 0)
    # One each first (coverage before proportion), in a fixed order, while n allows.
    for k in keys[:n]:
        give[k] = 1
    left = n - sum(give.values())
    if left <= 0:
        return give
    room = {k: sizes[k] - give[k] for k in keys}
    pool = sum(room.values())
    exact = {k: left * room[k] / pool for k in keys}
    for k in keys:
        give[k] += int(exact[k])
    rest = n - sum(give.values())
    for k in sorted(keys, key=lambda k: (-(exact[k] - int(exact[k])), k))[:rest]:
        give[k] += 1
    return give


def stratified_sample(tasks: Iterable[dict], n: int, seed: int) -> Sample:
    """n tasks stratified by site, intent and language (all of them when n >= the pool)."""
    if n < 0:
        raise ValueError(f"sample size must be >= 0, got {n}")
    by: dict[Stratum, list[dict]] = defaultdict(list)
    seen: set[str] = set()
    for task in tasks:
        if task["id"] in seen:
            raise ValueError(f"task {task['id']} is in the pool twice")
        seen.add(task["id"])
        by[stratum(task)].append(task)
    shares = _shares({k: len(v) for k, v in by.items()}, n)
    chosen: list[str] = []
    for key in sorted(by):
        ranked = sorted(by[key], key=lambda t: _rank(seed, t["id"]))
        chosen += [t["id"] for t in ranked[: shares[key]]]
    return Sample(
        seed=seed,
        n=n,
        task_ids=tuple(sorted(chosen)),
        strata={k: v for k, v in shares.items() if v},
    )


def pick(tasks: Sequence[dict], sample: Sample) -> list[dict]:
    """The sample's tasks, in the pool's order."""
    wanted = set(sample.task_ids)
    return [t for t in tasks if t["id"] in wanted]
