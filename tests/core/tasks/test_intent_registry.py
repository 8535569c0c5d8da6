"""The intent registry: one module per intent, found by discovery, and the producer's output
unchanged by the move (the digests below were taken from the producer before the split)."""

from __future__ import annotations

import hashlib
import importlib
import json
from datetime import UTC, datetime

import pytest

from newsbench_dagster.core.scoring.checkers import CHECKERS
from newsbench_dagster.core.tasks import intents
from newsbench_dagster.core.tasks.contract import task_schema
from newsbench_dagster.core.tasks.intents import ALL_INTENTS
from newsbench_dagster.core.tasks.poll import poll_site
from newsbench_dagster.core.tasks.produce import make_tasks
from newsbench_dagster.core.web.network import Fetcher, Routing
from newsbench_dagster.core.web.sites import load_sites
from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom
from newsbench_dagster.paths import SITES_FILE

AT = datetime(2026, 11, 29, 12, tzinfo=UTC)

# sha256 of json.dumps([make_tasks(site, AT.date(), rows, 3, ALL_INTENTS, partner=next site)
# for every site], sort_keys=True), computed by this test against the single-file producer.py
# (before the intents moved to core/intents/): any change to a task's content or order shows.
GOLDEN_TASKS = "c25724b80506c1d4a1319dc8e6f004f2d57447bd39ed9652d5e16d37be6b1fa2"
# sha256 of json.dumps of the producer's exported tables, in their order (not sorted), taken
# the same way: the names other modules import keep their content and their order.
GOLDEN_TABLES = "4ddcf875ee20fed897fc68c07ebb3788cf168c1ea3ea562ddfc639431e1b6b94"


def _digest(obj, *, sort_keys: bool) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=sort_keys).encode()).hexdigest()


def test_tasks_are_unchanged_for_every_site():
    registry = load_sites(SITES_FILE)
    sites = registry.sites
    made = []
    with (
        NewsroomServer(Newsroom(seed=7), clock=FixedClock(AT)) as server,
        Fetcher(Routing.via_proxy(server.address), registry.allowed_origins) as fetcher,
    ):
        for i, site in enumerate(sites):
            rows = poll_site(site, fetcher, None, AT.date())
            partner = sites[(i + 1) % len(sites)]
            made.append(make_tasks(site, AT.date(), rows, 3, ALL_INTENTS, partner=partner))
    assert all(made), "every site should yield tasks"
    assert _digest(made, sort_keys=True) == GOLDEN_TASKS


def test_exported_tables_are_unchanged():
    tables = {
        name: getattr(intents, name)
        for name in (
            "READ_INTENTS",
            "STATE_INTENTS",
            "ALL_INTENTS",
            "PROMPTS",
            "ORACLE_KINDS",
            "ANSWER_FORMATS",
            "FORBIDDEN_EVENTS",
            "STATE_CONTRACTS",
            "ALLOWED_CHANGES",
            "CHECKS",
        )
    }
    assert _digest(tables, sort_keys=False) == GOLDEN_TABLES


def test_every_intent_has_a_module_a_schema_entry_and_a_checker():
    found = intents.INTENTS
    assert tuple(found) == ALL_INTENTS
    for name in ALL_INTENTS:
        module = importlib.import_module(f"newsbench_dagster.core.tasks.intents.{name}")
        assert module.INTENT.name == name, "one module per intent, named after it"
        assert module.BUILDS, f"{name} builds no tasks"
        assert {b[1] for b in intents.BUILDERS if b[2] in dict(module.BUILDS).values()} == {name}
    enum = task_schema()["properties"]["intent"]["enum"]
    assert set(enum) == set(found) == set(CHECKERS)


@pytest.mark.parametrize("name", ALL_INTENTS)
def test_each_intent_says_how_to_ask_and_answer(name):
    intent = intents.INTENTS[name]
    assert set(intent.prompts) == {"en", "de", "fr"}
    assert intent.answer_format and intent.checks
    if intent.kind == "state":
        assert intent.allowed_changes and intent.contract.get("terminal_state")
    else:
        assert intent.allowed_changes is None and not intent.contract
