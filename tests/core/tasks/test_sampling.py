"""The PR-sized sample: stratified by site, intent and language, seeded, reproducible, stable
when the pool grows; and the nightly full set when n covers the pool."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from newsbench_dagster.core.tasks.sampling import pick, stratified_sample, stratum

SITES = [f"site{i:02d}" for i in range(20)]
INTENTS = ["find_top_headline", "extract_article_metadata", "live_blog_latest"]


def pool(size: int = 1200, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(size):
        site = SITES[i % len(SITES)]
        out.append(
            {
                "id": f"t-{i:016x}",
                "site": site,
                "intent": rng.choice(INTENTS),
                "constraints": {"language": ("en", "de", "fr")[SITES.index(site) % 3]},
            }
        )
    return out


def test_the_same_pool_and_seed_give_the_same_sample_in_any_order():
    tasks = pool()
    a = stratified_sample(tasks, 200, seed=7)
    b = stratified_sample(list(reversed(tasks)), 200, seed=7)
    assert a == b and len(a.task_ids) == 200
    assert stratified_sample(tasks, 200, seed=8).task_ids != a.task_ids


def test_every_stratum_is_in_a_pr_sized_sample_in_proportion():
    tasks = pool()
    sample = stratified_sample(tasks, 200, seed=3)
    chosen = pick(tasks, sample)
    assert len(chosen) == 200
    strata = Counter(stratum(t) for t in tasks)
    drawn = Counter(stratum(t) for t in chosen)
    assert set(drawn) == set(strata)  # 60 strata, all present
    assert {s for s, _, _ in drawn} == set(SITES)
    for key, k in drawn.items():
        assert abs(k - 200 * strata[key] / len(tasks)) <= 2, key
    assert dict(drawn) == sample.strata


def test_a_task_stays_sampled_when_the_pool_grows():
    tasks = pool(1200)
    before = set(stratified_sample(tasks, 400, seed=5).task_ids)
    grown = tasks + [{**t, "id": t["id"] + "-new"} for t in pool(60, seed=9)]
    after = set(stratified_sample(grown, 420, seed=5).task_ids)
    assert len(before & after) >= 0.9 * len(before)


def test_n_at_least_the_pool_is_the_full_set_and_bad_input_is_named():
    tasks = pool(50)
    assert set(stratified_sample(tasks, 500, seed=1).task_ids) == {t["id"] for t in tasks}
    assert stratified_sample(tasks, 0, seed=1).task_ids == ()
    with pytest.raises(ValueError, match="twice"):
        stratified_sample(tasks + tasks[:1], 10, seed=1)
    with pytest.raises(ValueError, match=">= 0"):
        stratified_sample(tasks, -1, seed=1)


def test_tasks_sample_command_over_the_shipped_suites():
    import json

    from typer.testing import CliRunner

    from newsbench_dagster.cli import app

    result = CliRunner().invoke(app, ["tasks", "sample", "--n", "5", "--seed", "2", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    again = CliRunner().invoke(app, ["tasks", "sample", "--n", "5", "--seed", "2", "--json"])
    assert json.loads(again.stdout) == out and len(out["task_ids"]) == 5
