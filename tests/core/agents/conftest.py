"""Fixtures of the agent tests: the harbor tasks the model-backed adapters work on (the
command adapter's tests shape their own)."""

from __future__ import annotations

import copy

import pytest


@pytest.fixture(scope="module")
def harbor(harbor_today):
    """Today's harbor tasks (lead story, one article's metadata) and robots rules."""
    day, tasks, robots = harbor_today
    tasks = copy.deepcopy(tasks)
    for t in tasks:
        t["constraints"]["max_seconds"] = 30
        t["constraints"]["max_steps"] = 8
    assert {t["intent"] for t in tasks} == {"find_top_headline", "extract_article_metadata"}
    return day, tasks, robots
