"""Freshness is measured on the clock of the world the run saw (core.scoring.world_clock): a
frozen newsroom's instant, a recording's clock, wall time only for the live world. A real run of
the reference agent on harbor with the newsroom's clock stopped, then scored as if run on other
days: the row's `started_at` is the only wall-clock input scoring has, so moving it is moving
the wall clock between two runs of the same task at the same instant."""

from __future__ import annotations

import copy
import math
from datetime import datetime, timedelta

import pytest

from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.scoring.score import score_run
from newsbench_dagster.core.scoring.world_clock import world_clock
from newsbench_dagster.newsroom.launcher import health, newsroom_world
from tests.support.newsroom_clock import frozen_now

LATER = timedelta(days=3, hours=5)


@pytest.fixture(scope="module")
def frozen_run(newsroom_server, harbor_today, browser_options, tmp_path_factory):
    """(run row, task, frozen instant): the lead story of harbor answered by the reference
    agent in a newsroom whose clock is stopped, its world manifest read from the server."""
    day, tasks, robots = harbor_today
    task = copy.deepcopy(next(t for t in tasks if t["intent"] == "find_top_headline"))
    agent = build_agent(AgentManifest(name="reference", version="t", adapter="reference"))
    with frozen_now(newsroom_server) as at:
        world = newsroom_world(newsroom_server.port, health(newsroom_server.port) or {})
        runner = Runner(
            [agent],
            options=browser_options,
            robots=robots,
            store=LocalArtifactStore(tmp_path_factory.mktemp("artifacts")),
            settings=RunSettings(screenshot=False, artifacts=()),
            world=world.manifest,
        )
        (row,) = run_tasks([task], day, runner)
    return row, task, at


def _with(row: dict, *, started_later: timedelta = timedelta(0), **world) -> dict:
    out = copy.deepcopy(row)
    out["started_at"] = row["started_at"] + started_later
    out["environment"]["world"].update(world)
    return out


def _parts(score: dict) -> dict:
    return score["reward_components"]["timeliness"]


def test_a_frozen_run_scores_the_same_whatever_day_it_runs(frozen_run):
    row, task, at = frozen_run
    assert row["environment"]["world"]["frozen_at"] == at.isoformat()
    now = score_run(row, task)
    assert now["success"], now["checker"]
    assert now["reward_components"]["clock"] == {"source": "frozen", "answered_at": at.isoformat()}
    for moved in (LATER, -LATER):
        other = score_run(_with(row, started_later=moved), task)
        assert other["reward_components"] == now["reward_components"]
        assert other["reward"] == now["reward"]
    # Measured at the instant: the story's age then, not since.
    assert 0 <= _parts(now)["age_minutes"] < 24 * 60


def test_a_frozen_instant_at_or_before_the_story_is_full_freshness(frozen_run):
    row, task, _ = frozen_run
    parts = _parts(score_run(row, task))
    published = datetime.fromisoformat(row["environment"]["world"]["frozen_at"]) - timedelta(
        minutes=parts["age_minutes"]
    )
    for at in (published, published - timedelta(hours=2)):
        frozen = score_run(_with(row, started_later=LATER, frozen_at=at.isoformat()), task)
        assert _parts(frozen)["freshness"] == 1.0 and _parts(frozen)["age_minutes"] == 0.0
    # Two hours after the story: four half-lives of 30 minutes.
    later = published + timedelta(hours=2)
    aged = _parts(score_run(_with(row, frozen_at=later.isoformat()), task))
    assert aged["age_minutes"] == pytest.approx(120, abs=0.01)
    assert aged["freshness"] == pytest.approx(1 / 16, abs=1e-4)


def test_a_live_run_ages_with_the_wall_clock(frozen_run):
    row, task, _ = frozen_run
    live = _with(row, frozen_at=None)
    clock = world_clock(live)
    assert clock.source == "live"
    assert clock.answered_at == row["started_at"] + timedelta(seconds=row["answer_seconds"])
    now, later = (
        _parts(score_run(_with(live, started_later=d), task)) for d in (timedelta(0), LATER)
    )
    assert later["age_minutes"] == pytest.approx(
        now["age_minutes"] + LATER.total_seconds() / 60, abs=0.01
    )
    assert later["freshness"] < now["freshness"] or now["freshness"] == 0.0


def test_a_replayed_run_is_on_the_recordings_clock(frozen_run):
    row, _, at = frozen_run
    recorded = at - timedelta(days=2)
    replayed = {**_with(row, frozen_at=None), "replay": {"clock": recorded.isoformat()}}
    clock = world_clock(replayed)
    assert clock.source == "replay"
    took = timedelta(seconds=row["answer_seconds"])
    assert clock.answered_at == recorded + took
    assert not math.isclose((clock.answered_at - row["started_at"]).total_seconds(), 0)
