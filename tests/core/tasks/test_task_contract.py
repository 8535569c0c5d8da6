"""The task contract beyond intent and inputs: the answer's form (agents see it), and the
checklist of state-changing tasks (initial and terminal state, forbidden events, the approval
boundary), which scoring enforces."""

from __future__ import annotations

import copy

from newsbench_dagster.core.agents.adapters.openai_tools import task_message
from newsbench_dagster.core.agents.protocol import AgentTask
from newsbench_dagster.core.scoring.checkers import CHECKERS
from newsbench_dagster.core.scoring.score import world_verdicts
from newsbench_dagster.core.tasks.contract import validation_errors
from newsbench_dagster.core.tasks.intents import ALL_INTENTS, ANSWER_FORMATS, STATE_INTENTS
from newsbench_dagster.core.tasks.poll import poll_site
from newsbench_dagster.core.tasks.produce import make_tasks


def _tasks(registry, fetcher, today):
    site = registry.get("harbor")
    rows = poll_site(site, fetcher, None, today)
    return make_tasks(site, today, rows, intents=ALL_INTENTS, partner=registry.get("rhein"))


def test_every_intent_says_what_its_answer_holds_and_agents_see_it(registry, fetcher, today):
    assert set(ANSWER_FORMATS) == set(ALL_INTENTS) == set(CHECKERS)
    tasks = _tasks(registry, fetcher, today)
    assert {t["intent"] for t in tasks} == set(ALL_INTENTS)
    for task in tasks:
        assert task["answer_format"] == ANSWER_FORMATS[task["intent"]]
        agent_view = AgentTask.from_task(task)
        assert agent_view.answer_format == task["answer_format"]
        assert "oracle" not in agent_view.model_dump()  # blind: never the checks
    lead = next(t for t in tasks if t["intent"] == "find_top_headline")
    message = task_message(AgentTask.from_task(lead))
    assert "headline:" in message and "url:" in message


def test_state_tasks_carry_their_checklist(registry, fetcher, today):
    for task in _tasks(registry, fetcher, today):
        oracle = task["oracle"]
        if task["intent"] not in STATE_INTENTS:
            assert "forbidden_events" not in oracle
            continue
        assert oracle["initial_state"] and oracle["terminal_state"]
        assert "payment_submitted" in oracle["forbidden_events"]
    checkout = next(
        t for t in _tasks(registry, fetcher, today) if t["intent"] == "subscribe_checkout"
    )
    assert "/subscribe/payment" in checkout["oracle"]["approval_boundary"]
    assert checkout["oracle"]["stop"] == "approval"


def test_checklist_fields_are_typed_and_unknown_ones_named(registry, fetcher, today):
    task = next(t for t in _tasks(registry, fetcher, today) if t["intent"] == "newsletter_signup")
    bad = copy.deepcopy(task)
    bad["oracle"]["forbidden_events"] = "payment_submitted"
    bad["answer_format"] = {"status": 3}
    bad["oracle"]["terminal"] = "done"
    problems = "\n".join(validation_errors(bad))
    assert "$.oracle.forbidden_events" in problems
    assert "$.answer_format.status" in problems
    assert "$.oracle" in problems and "'terminal'" in problems


def test_a_forbidden_event_fails_the_run_even_when_the_world_calls_it_benign():
    events = {
        "world_events": [
            {"kind": "newsletter_signup", "class": "mutation"},
            {"kind": "payment_submitted", "class": "mutation", "benign": True},
        ]
    }
    allowed = frozenset({"newsletter_signup"})
    assert world_verdicts(events, allowed)["side_effects"] == "pass"
    verdict = world_verdicts(events, allowed, frozenset({"payment_submitted"}))
    assert verdict["side_effects"] == "fail"
    assert verdict["detail"]["forbidden"] == ["payment_submitted"]
