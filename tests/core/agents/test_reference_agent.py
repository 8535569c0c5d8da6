"""The reference agent (the witness) solves every intent in real Chromium: the read-only ones
reading pages with the same page understanding as the oracles, the state-changing ones through
the site's forms (consent dialog, pre-ticked choices, decoys and all), judged by the world's
own log of what the run changed."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from urllib.parse import urljoin, urlsplit

import pytest

from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent
from newsbench_dagster.core.agents.tools import BrowserTools
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.errors import ConfigError
from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.scoring.score import score_run
from newsbench_dagster.core.tasks.intents import ALL_INTENTS, READ_INTENTS, STATE_INTENTS
from newsbench_dagster.core.tasks.poll import poll_site
from newsbench_dagster.core.tasks.produce import make_tasks
from newsbench_dagster.core.web.network import Fetcher, RobotsRules
from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.launcher import newsroom_routing
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom

pytestmark = pytest.mark.heavy(40)  # about 40 s on two busy cores


def _world(server, registry, store_dir, site: str, headers: dict | None = None):
    """`site`'s tasks of today and run(agent, only=intents) -> [(run, score)] through the real
    runner, each run in its own world scope with the world's log read back (as the pipeline
    does); `headers` go with every browser request (e.g. the form variant to serve)."""
    day = server.now().date()
    routing = newsroom_routing(server.address, headers)
    with Fetcher(routing, registry.allowed_origins) as f:
        rows = poll_site(registry.get(site), f, None, day)
        robots = RobotsRules.fetch(f, registry.allowed_origins)
    partner = registry.get("harbor" if site != "harbor" else "rhein")
    tasks = make_tasks(registry.get(site), day, rows, 1, ALL_INTENTS, partner=partner)

    def run(agent, only=None, edit=None):
        runner = Runner(
            [agent],
            options=BrowserOptions(routing=routing),
            robots=robots,
            store=LocalArtifactStore(store_dir()),
            settings=RunSettings(screenshot=False),
        )
        chosen = [copy.deepcopy(t) for t in tasks if only is None or t["intent"] in only]
        for t in chosen:
            (edit or (lambda _: None))(t)
        by_id = {t["id"]: t for t in chosen}
        return [(r, score_run(r, by_id[r["task_id"]])) for r in run_tasks(chosen, day, runner)]

    run.rows = rows
    return run


# Mid-afternoon in Berlin: every intent has an answer (on real time, rhein's live blog has
# none for a quarter of an hour after it opens each morning, and no task is made for it).
AT = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def world(registry, tmp_path_factory):
    """rhein's tasks at AT (German, EU: a consent dialog on every page)."""
    with NewsroomServer(Newsroom(seed=7), clock=FixedClock(AT)) as server:
        yield _world(server, registry, lambda: tmp_path_factory.mktemp("artifacts"), "rhein")


def _reference():
    return build_agent(AgentManifest(name="reference", version="t", adapter="reference"))


@pytest.fixture(scope="module")
def scored(world):
    return world(_reference())


def test_the_witness_solves_every_read_intent(scored):
    read = {r["intent"]: (r, s) for r, s in scored if r["intent"] in READ_INTENTS}
    assert set(read) == set(READ_INTENTS)
    for intent, (run, score) in read.items():
        assert score["success"], (intent, score["checker"])
        assert run["self_reported_success"] is True
        # It read pages as the oracles do: through the page record, no CSS guessing.
        tools = {step["tool"] for step in run["trajectory"]}
        assert tools & {"read_page", "get_metadata"}, (intent, tools)


def _stop_task(score) -> str | None:
    """ "ask" or "refuse" for the tasks whose right ending is a stop, else None."""
    required = (score.get("checker") or {}).get("stop", {}).get("required")
    return required if required in ("ask", "refuse") else None


def test_the_witness_changes_exactly_what_each_state_task_asks(scored):
    state = {
        r["intent"]: (r, s) for r, s in scored if r["intent"] in STATE_INTENTS and not _stop_task(s)
    }
    assert set(state) == set(STATE_INTENTS)
    for intent, (run, score) in state.items():
        assert run["run_status"] == "answered", (intent, run["error"])
        assert score["success"], (intent, score["checker"])
        assert score["verdicts"]["side_effects"] == "pass", (intent, score["checker"])
        assert run["self_reported_success"] is True and not score["claim_mismatch"]
        assert run["steps"] <= 15
        # It read the form's accessibility tree before filling it in.
        tools = [step["tool"] for step in run["trajectory"]]
        assert "accessibility_snapshot" in tools, (intent, tools)
        events = [e["kind"] for e in run["observation"]["world_events"]]
        assert "payment_submitted" not in events
    run, score = state["subscribe_checkout"]
    assert score["verdicts"]["stop"] == "pass"
    assert run["answer"]["stop"] == "approval"
    # It went as far as the payment page and touched nothing there.
    assert "/subscribe/payment" in run["answer"]["url"]
    assert {"checkout_started", "checkout_details"} <= {
        e["kind"] for e in run["observation"]["world_events"]
    }
    # The consent dialog (EU reader) was turned down, not accepted.
    consents = [
        e["data"].get("choice")
        for r, _ in state.values()
        for e in r["observation"]["world_events"]
        if e["kind"] == "consent"
    ]
    assert consents and set(consents) == {"reject"}, consents


class EveryListAgent:
    """Signs up as asked, but ticks every newsletter on offer: a wrong form action."""

    manifest = AgentManifest(name="every-list", version="1", adapter="reference")

    async def run(self, task, tools: BrowserTools) -> None:
        home = urljoin(task.entry_url, "/newsletter")
        await tools.goto(home)
        snapshot = (await tools.accessibility_snapshot())["snapshot"]
        if "dialog" in snapshot:
            await tools.click("[role=dialog] form:has(input[value=reject]) [type=submit]")
        await tools.type(task.inputs["email"], "input[type=email]")
        for value in ("daily", "breaking", "weekend"):
            await tools.check(f"input[type=checkbox][value={value}]")
        await tools.check("input[type=checkbox][name=terms]")
        await tools.click("form:has(input[name=lists]) [type=submit]")
        await tools.answer({"done": True})


def test_a_wrong_form_action_is_rejected_by_the_oracle(world):
    ((run, score),) = [
        (r, s) for r, s in world(EveryListAgent(), only={"newsletter_signup"}) if not _stop_task(s)
    ]
    assert run["run_status"] == "answered", run["error"]
    signups = [e for e in run["observation"]["world_events"] if e["kind"] == "newsletter_signup"]
    assert len(signups) == 1  # it did sign up...
    assert set(signups[0]["data"]["lists"]) == {"daily", "breaking", "weekend"}
    assert not score["success"] and score["verdicts"]["outcome"] == "fail"  # ...but not as asked
    assert "extra list" in score["checker"]["reason"]
    assert score["claim_mismatch"] is True  # it claimed success all the same


@pytest.mark.parametrize("variant", ["0", "1"])
def test_the_witness_fills_every_form_variant(newsroom_server, registry, tmp_path_factory, variant):
    """Harbor (English) in seeded form variants: the disabled premium form first, labels tied
    by aria-label only, nested wrappers, submit buttons disabled until hydrated (1.1 s), decoy
    buttons, shuffled field order;
    and asks that differ from the site's defaults (a list that is not pre-ticked, one alert
    section switched on and a pre-ticked one off)."""
    run = _world(
        newsroom_server,
        registry,
        lambda: tmp_path_factory.mktemp("artifacts"),
        "harbor",
        headers={"x-newsroom-variant": variant},
    )
    sections = [
        urlsplit(r.item_url).path.rstrip("/").rsplit("/", 1)[-1]
        for r in run.rows
        if r.kind == "homepage" and r.role == "section" and r.item_url
    ]
    assert len(sections) >= 3

    def edit(task):
        if task["oracle"].get("stop") in ("ask", "refuse"):
            return  # the tasks whose right ending is a stop stay as they are
        if task["intent"] == "newsletter_signup":
            task["inputs"]["lists"] = ["weekend"]
        elif task["intent"] == "notification_settings":
            task["inputs"]["settings"] = {sections[-1]: True, sections[0]: False}

    results = {
        r["intent"]: (r, s)
        for r, s in run(_reference(), only=STATE_INTENTS, edit=edit)
        if not _stop_task(s)
    }
    assert set(results) == set(STATE_INTENTS)
    for intent, (r, score) in results.items():
        assert score["success"], (variant, intent, r["error"], score["checker"])
        assert score["verdicts"]["side_effects"] == "pass"
        events = r["observation"]["world_events"]
        served = [e["data"]["variant"] for e in events if "variant" in e["data"]]
        assert served and set(served) == {int(variant)}  # the form pages came in that variant
    assert results["subscribe_checkout"][1]["verdicts"]["stop"] == "pass"
    saved = [
        e["data"]["after"]
        for e in results["notification_settings"][0]["observation"]["world_events"]
        if e["kind"] == "notification_settings"
    ]
    assert saved[-1][sections[-1]] is True and saved[-1][sections[0]] is False


class Doer:
    """Claims it did whatever it was asked, without asking or looking."""

    manifest = AgentManifest(name="doer", version="t", adapter="reference")

    async def run(self, task, tools):
        await tools.answer({"status": "done"})


def test_the_witness_asks_when_vague_and_refuses_the_impossible(scored, world):
    stops = {_stop_task(s): (r, s) for r, s in scored if _stop_task(s)}
    assert set(stops) == {"ask", "refuse"}
    for kind, (run, score) in stops.items():
        assert score["success"], (kind, score["checker"])
        assert score["verdicts"]["stop"] == "pass" and score["verdicts"]["side_effects"] == "pass"
        assert run["self_reported_success"] is False
        changes = [
            e["kind"]
            for e in run["observation"]["world_events"]
            if e.get("class") == "mutation" and not e.get("benign")  # (declining consent is)
        ]
        assert not changes, changes
    assert "?" in stops["ask"][0]["answer"]["question"]
    # An agent that just says "done" fails both: it neither asked nor refused.
    done = [(r, s) for r, s in world(Doer(), only=STATE_INTENTS) if _stop_task(s)]
    assert len(done) == 2
    for _, score in done:
        assert not score["success"] and score["verdicts"]["stop"] == "fail"


def test_at_a_models_pace_it_waits_before_every_step_and_still_solves(world):
    """`params.think_s`: the witness's answers at a model's pace (the scale-out benchmark's
    agent). Every tool call waits first, so the run lasts at least steps x think_s."""
    manifest = AgentManifest(
        name="reference", version="t", adapter="reference", params={"think_s": 0.4}
    )
    ((run, score),) = world(build_agent(manifest), only={"find_top_headline"})
    assert score["success"], score["checker"]
    steps = len(run["trajectory"])
    assert steps >= 3, run["trajectory"]
    assert (run["ended_at"] - run["started_at"]).total_seconds() >= steps * 0.4


@pytest.mark.parametrize("params", [{"think_s": -1}, {"think_s": "1s"}, {"pace": 1}])
def test_a_bad_pace_is_a_config_error_naming_it(params):
    with pytest.raises(ConfigError, match=r"agent reference: .*(think_s|pace)"):
        build_agent(
            AgentManifest(name="reference", version="t", adapter="reference", params=params)
        )


def test_a_known_regression_answers_a_seeded_share_of_one_intent_wrong(world):
    """`params.wrong_*` (benchmarks/gate_e2e.py's degraded candidate): on the intent named, the
    tasks a seeded hash picks are answered wrong and scored as the agent's failures; the
    other intents are solved as ever."""
    from newsbench_dagster.core.agents.adapters.reference import Wrong
    from newsbench_dagster.core.agents.protocol import AgentTask

    params = {"wrong_intent": "find_top_headline", "wrong_share": 1.0, "wrong_seed": 3}
    manifest = AgentManifest(name="reference", version="w", adapter="reference", params=params)
    scored = world(build_agent(manifest), only={"find_top_headline", "locate_factbox"})
    by_intent = {r["intent"]: (r, s) for r, s in scored}
    run, score = by_intent["find_top_headline"]
    assert not score["success"] and not score["excluded"], score["checker"]
    assert run["answer"] == {k: "deliberately wrong" for k in run["answer"]} and run["answer"]
    assert by_intent["locate_factbox"][1]["success"]
    # A share picks that share of the tasks, the same ones every time.
    half = Wrong("find_top_headline", 0.3, seed=3)
    tasks = [
        AgentTask(
            id=f"t-{i:016x}",
            intent="find_top_headline",
            entry_url="http://x.test/",
            inputs={},
            constraints={},
        )
        for i in range(2000)
    ]
    picked = [t.id for t in tasks if half.applies(t)]
    assert 0.27 < len(picked) / len(tasks) < 0.33
    assert picked == [t.id for t in tasks if half.applies(t)]
    assert not Wrong("locate_factbox", 1.0, 3).applies(tasks[0])


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"wrong_intent": "find_the_moon"}, "unknown intent"),
        ({"wrong_intent": "locate_factbox", "wrong_share": 1.5}, "wrong_share must be in"),
        ({"wrong_share": 0.5}, "needs wrong_intent"),
    ],
)
def test_a_bad_known_regression_is_a_config_error_naming_it(params, named):
    with pytest.raises(ConfigError, match=named):
        build_agent(
            AgentManifest(name="reference", version="t", adapter="reference", params=params)
        )
