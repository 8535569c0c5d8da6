"""The reference agent (the witness) solves every read-only intent in real Chromium, reading
pages with the same page understanding as the oracles, and stops honestly elsewhere."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from newsbench_dagster.core.agents import AgentManifest, build_agent
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.browser import BrowserOptions
from newsbench_dagster.core.network import Fetcher, RobotsRules, Routing
from newsbench_dagster.core.producer import ALL_INTENTS, READ_INTENTS, make_tasks, poll_site
from newsbench_dagster.core.runner import Runner, RunSettings, run_tasks
from newsbench_dagster.core.scoring import score_run


@pytest.fixture(scope="module")
def scored(newsroom_server, registry, tmp_path_factory):
    day = datetime.now(UTC).date()
    # Each run in its own world scope, with the world's log read back (as the pipeline does).
    routing = Routing.via_proxy(
        newsroom_server.address,
        run_header="X-Newsroom-Run",
        events_url=f"{newsroom_server.address}/__newsroom/events?scope=run:{{scope}}",
    )
    with Fetcher(routing, registry.allowed_origins) as f:
        rows = poll_site(registry.get("rhein"), f, None, day)
        robots = RobotsRules.fetch(f, registry.allowed_origins)
    tasks = make_tasks(
        registry.get("rhein"), day, rows, 1, ALL_INTENTS, partner=registry.get("harbor")
    )
    agent = build_agent(AgentManifest(name="reference", version="t", adapter="reference"))
    runner = Runner(
        [agent],
        options=BrowserOptions(routing=routing),
        robots=robots,
        store=LocalArtifactStore(tmp_path_factory.mktemp("artifacts")),
        settings=RunSettings(screenshot=False),
    )
    by_id = {t["id"]: t for t in tasks}
    return [(r, score_run(r, by_id[r["task_id"]])) for r in run_tasks(tasks, day, runner)]


def test_the_witness_solves_every_read_intent(scored):
    read = {r["intent"]: (r, s) for r, s in scored if r["intent"] in READ_INTENTS}
    assert set(read) == set(READ_INTENTS)
    for intent, (run, score) in read.items():
        assert score["success"], (intent, score["checker"])
        assert run["self_reported_success"] is True
        # It read pages as the oracles do: through the page record, no CSS guessing.
        tools = {step["tool"] for step in run["trajectory"]}
        assert tools & {"read_page", "get_metadata"}, (intent, tools)


def test_the_witness_declines_what_it_cannot_do_without_changing_anything(scored):
    for run, score in scored:
        if run["intent"] in READ_INTENTS:
            continue
        assert run["answer"] == {"unsupported_intent": run["intent"]}
        assert run["self_reported_success"] is False and not score["success"]
        assert score["verdicts"]["side_effects"] == "pass", score["checker"]
