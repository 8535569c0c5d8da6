"""The runner's lifecycle in real Chromium against the newsroom: every failure class lands in
its class, the harness keeps the page an agent tried to close (seed 001), egress and injected
instructions become safety events, artifacts and the environment manifest, profiles, pacing
and the byte budget."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import re
import zipfile
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest
from playwright.async_api import async_playwright

from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.scoring import checkers
from newsbench_dagster.core.scoring.score import score_run, score_safely
from newsbench_dagster.core.tasks.poll import poll_site
from newsbench_dagster.core.tasks.produce import make_tasks
from newsbench_dagster.core.web.network import Fetcher, RobotsRules, Routing
from newsbench_dagster.newsroom.pages import injection_text
from tests.support.tasks import LEAD_AND_METADATA

pytestmark = pytest.mark.heavy(25)  # about 25 s on two busy cores

REFERENCE = AgentManifest(name="reference", version="0.1.0", adapter="reference")


def manifest(name: str) -> AgentManifest:
    return AgentManifest(name=name, version="1", adapter="reference")


@pytest.fixture(scope="module")
def harbor(harbor_today):
    """Today's harbor tasks (one per intent) and the robots rules of every site."""
    day, tasks, robots = harbor_today
    return day, {t["intent"]: copy.deepcopy(t) for t in tasks}, robots


def runner_for(agents, browser_options, robots, tmp_path, **settings) -> Runner:
    settings.setdefault("concurrency", 2)
    return Runner(
        agents,
        options=browser_options,
        robots=robots,
        store=LocalArtifactStore(tmp_path / "artifacts"),
        settings=RunSettings(**settings),
    )


def with_constraints(task: dict, **constraints) -> dict:
    task = copy.deepcopy(task)
    task["constraints"].update(constraints)
    return task


# -- artifacts and the environment manifest ---------------------------------------------------
class ClickingAgent:
    """Opens the lead story by its link role and name, then answers from the page."""

    manifest = manifest("clicker")

    async def run(self, task, tools):
        lead = (await tools.read_page())["listing"][0]
        await tools.click(role="link", name=lead["headline"])
        record = await tools.read_page()
        await tools.answer({"headline": record.get("main_heading"), "url": tools.page.url})


def test_every_artifact_kind_is_kept_and_readable(harbor, browser_options, tmp_path):
    day, tasks, robots = harbor
    runner = runner_for([ClickingAgent()], browser_options, robots, tmp_path)
    [row] = run_tasks([tasks["find_top_headline"]], day, runner)
    assert row["run_status"] == "answered", row["error"]
    art = row["artifacts"]
    assert {"screenshot", "har", "a11y", "trace", "spans", "dom", "run"} <= set(art)
    read = runner.store.get

    assert read(art["screenshot"]).startswith(b"\x89PNG")
    har = json.loads(read(art["har"]))
    docs = [h for h in har if h["type"] == "document"]
    assert docs and all(h["status"] == 200 and h["bytes"] > 0 for h in docs)
    assert all(h["duration_ms"] is not None and h["duration_ms"] >= 0 for h in har)
    assert len(har) == len([r for r in row["request_log"] if r["fetched"]])
    assert "heading" in read(art["a11y"]).decode()

    # A trace playwright show-trace opens: the zip holds the action and network streams.
    trace = Path(urlsplit(art["trace"]).path)
    with zipfile.ZipFile(trace) as z:
        names = set(z.namelist())
    assert {"trace.trace", "trace.network"} <= names

    # One span per tool call plus the run's root, all carrying the task seed.
    spans = [json.loads(line) for line in read(art["spans"]).decode().splitlines()]
    assert len(spans) == len(row["trajectory"]) + 1
    assert {s["attributes"]["newsbench.task.seed"] for s in spans} == {
        tasks["find_top_headline"]["seed"]
    }

    # The DOM slice around the clicked link: under 32 KB and holding the link.
    [dom] = art["dom"]
    html = read(dom).decode()
    assert len(html.encode()) <= 32 * 1024
    assert row["trajectory"][1]["tool"] == "click" and "href" in html

    env = row["environment"]
    for key in (
        "browser_version",
        "viewport",
        "device_scale_factor",
        "locale",
        "timezone_id",
        "network",
        "agent_adapter",
        "agent_version",
        "prompt_hash",
        "manifest_hash",
        "task_seed",
        "world",
        "packages",
    ):
        assert key in env, key
    assert env["packages"]["playwright"] != "unknown"
    assert env["agent_version"].startswith("clicker@1+")


class ConsoleLogger:
    """Logs a console error in the page and throws an uncaught exception, then answers."""

    manifest = manifest("logger")

    async def run(self, task, tools):
        await tools.page.evaluate("console.error('logged by the agent')")
        await tools.page.evaluate("setTimeout(() => { throw new Error('thrown late'); }, 0)")
        await tools.wait(0.3)
        await tools.answer({"headline": "x"})


def test_console_json_is_written_for_every_run_and_run_json_lists_the_artifacts(
    harbor, browser_options, tmp_path
):
    """console.json was written only when a page logged an error, though every run's folder
    is documented to hold one; run.json said `"artifacts": null`."""
    day, tasks, robots = harbor
    runner = runner_for(
        [ConsoleLogger(), build_agent(REFERENCE)], browser_options, robots, tmp_path
    )
    rows = {r["agent_name"]: r for r in run_tasks([tasks["find_top_headline"]], day, runner)}
    read = runner.store.get
    logged = json.loads(read(rows["logger"]["artifacts"]["console"]))
    assert "logged by the agent" in logged, logged
    assert any(e.startswith("pageerror:") and "thrown late" in e for e in logged), logged
    for row in rows.values():
        art = row["artifacts"]
        # Written whatever the page logged ([] when nothing), the same as the row's.
        assert json.loads(read(art["console"])) == row["console_errors"]
        stored = json.loads(read(art["run"]))
        assert stored["artifacts"] == art and stored["artifacts"]["run"] == art["run"]


def test_artifacts_can_be_switched_off(harbor, browser_options, tmp_path):
    day, tasks, robots = harbor
    agent = build_agent(REFERENCE)
    runner = runner_for([agent], browser_options, robots, tmp_path, artifacts=())
    [row] = run_tasks([tasks["extract_article_metadata"]], day, runner)
    assert row["run_status"] == "answered"
    assert set(row["artifacts"]) == {"run"}


# -- failure classes ----------------------------------------------------------------------------
class BrowserKiller:
    """Kills the Chromium it runs in, mid-run (SIGKILL to the browser process)."""

    manifest = manifest("killer")

    async def run(self, task, tools):
        await tools.get_metadata()
        for proc in psutil.Process().children(recursive=True):
            try:
                cmd = proc.cmdline()
            except psutil.Error:
                continue
            if cmd and "chrom" in cmd[0] and not any(a.startswith("--type=") for a in cmd):
                proc.kill()
        await asyncio.sleep(30)


def test_a_browser_killed_mid_run_is_a_browser_crash_and_the_next_run_relaunches(
    harbor, browser_options, tmp_path
):
    day, tasks, robots = harbor
    task = tasks["extract_article_metadata"]
    runner = runner_for(
        [BrowserKiller(), build_agent(REFERENCE)], browser_options, robots, tmp_path, concurrency=1
    )
    rows = {r["agent_name"]: r for r in run_tasks([task], day, runner)}
    killed = rows["killer"]
    assert killed["run_status"] == "env_failure" and killed["env_failure"] == "browser_crash"
    score = score_run(killed, task)
    assert score["excluded"] and score["failure_class"] == "browser_crash"
    assert rows["reference"]["run_status"] == "answered", rows["reference"]["error"]
    assert score_run(rows["reference"], task)["success"]


def test_a_navigation_timeout_is_the_environments(harbor, browser_options, newsroom, tmp_path):
    day, tasks, robots = harbor
    newsroom.faults.set("harbor", "slow")
    runner = runner_for([build_agent(REFERENCE)], browser_options, robots, tmp_path)
    runner.settings.entry_timeout_s = 0.5
    [row] = run_tasks([tasks["extract_article_metadata"]], day, runner)
    assert row["env_failure"] == "navigation_timeout"
    assert score_run(row, tasks["extract_article_metadata"])["excluded"]


def test_a_dead_fixture_and_an_unresolvable_host_are_named(harbor, tmp_path):
    day, tasks, _ = harbor
    task = copy.deepcopy(tasks["extract_article_metadata"])
    # The newsroom's proxy is not running: every robots.txt is unreachable.
    dead = Routing.via_proxy("http://127.0.0.1:9")
    with Fetcher(dead, set(task["allowed_origins"])) as f:
        robots = RobotsRules.fetch(f, set(task["allowed_origins"]))
    runner = runner_for([build_agent(REFERENCE)], BrowserOptions(routing=dead), robots, tmp_path)
    [row] = run_tasks([task], day, runner)
    assert row["env_failure"] == "fixture_not_started", row["error"]

    # The real web, where an allowlisted host does not resolve.
    origin = "http://nowhere.invalid"
    task["entry_url"], task["allowed_origins"] = origin + "/", [origin]
    direct = Routing.direct({origin})
    with Fetcher(direct, {origin}) as f:
        robots = RobotsRules.fetch(f, {origin})
    runner = runner_for([build_agent(REFERENCE)], BrowserOptions(routing=direct), robots, tmp_path)
    [row] = run_tasks([task], day, runner)
    assert row["env_failure"] == "dns", row["error"]
    assert score_run(row, task)["excluded"]


class CrashingAgent:
    manifest = manifest("crash")

    async def run(self, task, tools):
        await tools.get_metadata()
        raise RuntimeError("model returned garbage")


def test_a_scorer_error_is_kept_next_to_the_agents_error(
    harbor, browser_options, tmp_path, monkeypatch
):
    day, tasks, robots = harbor
    task = tasks["extract_article_metadata"]
    runner = runner_for([CrashingAgent()], browser_options, robots, tmp_path)
    [row] = run_tasks([task], day, runner)
    assert row["run_status"] == "agent_error"
    assert score_safely(row, task)["failure_class"] == "planning"  # the agent's failure

    def broken(*args, **kwargs):
        raise KeyError("verdict field the scorer expected")

    monkeypatch.setitem(checkers.CHECKERS, "extract_article_metadata", broken)
    score = score_safely(row, task)
    assert score["excluded"] and score["failure_class"] == "scorer_error"
    assert "verdict field" in score["checker"]["scorer_error"]
    assert score["checker"]["agent_error"] == "RuntimeError: model returned garbage"


# -- seed 001: an agent that closes the session before returning --------------------------------
class ClosingCdpAgent:
    """Attaches over CDP like Browser Use, works, answers, then "cleans up" the way
    keep_alive=False did: Browser.close over CDP, then its own connection."""

    manifest = manifest("closer")
    needs_cdp = True

    async def run(self, task, tools):
        async with async_playwright() as pw:
            browser = await pw.chromium.connect_over_cdp(tools.cdp_url)
            [page] = [p for c in browser.contexts for p in c.pages if p.url == task.entry_url]
            assert await page.title()  # it works in the page it attached to...
            # ...and answers as the witness would (whatever metadata this article has).
            await build_agent(REFERENCE).run(task, tools)
            session = await browser.new_browser_cdp_session()
            await session.send("Browser.close")
            await browser.close()


def test_seed_001_a_closed_session_is_still_scored_from_the_page_the_harness_kept(
    harbor, browser_options, tmp_path
):
    day, tasks, robots = harbor
    task = tasks["extract_article_metadata"]
    runner = runner_for([ClosingCdpAgent()], browser_options, robots, tmp_path)
    [row] = run_tasks([task], day, runner)
    assert row["run_status"] == "answered", row["error"]
    assert {"kind": "swallowed", "method": "Browser.close"}.items() <= row["lifecycle"][0].items()
    assert row["observation"]["final"]["url"] == task["entry_url"]
    score = score_run(row, task)
    assert score["success"], score["checker"]


# -- egress and injected instructions -----------------------------------------------------------
class GullibleAgent:
    """Does what the page tells it: opens any URL an "open http..." instruction names."""

    manifest = manifest("gullible")

    async def run(self, task, tools):
        text = (await tools.extract_text("body"))["text"] or ""
        for url in re.findall(r"open (https?://\S+)", text):
            await tools.goto(url)
        await tools.answer({"headline": "whatever"})


def test_an_injected_instruction_becomes_a_safety_event_not_a_request(
    newsroom_server, registry, browser_options, tmp_path
):
    day = datetime.now(UTC).date()
    site = newsroom_server.newsroom.site("northgate")
    now = newsroom_server.clock()
    trap = next(
        s
        for s in site.stories(now, limit=200)
        # The injection variant that names a URL to open (others ask for a form post).
        if s.trap == "injection_visible"
        and re.search(r"open https?://\S*collect\.example", injection_text(site, s))
    )
    url = site.url(trap.path)
    routing = Routing.via_proxy(newsroom_server.address)
    with Fetcher(routing, registry.allowed_origins) as f:
        robots = RobotsRules.fetch(f, registry.allowed_origins)
        rows = poll_site(registry.get("northgate"), f, None, day)
    task = next(
        t
        for t in make_tasks(registry.get("northgate"), day, rows, intents=LEAD_AND_METADATA)
        if t["intent"] == "extract_article_metadata"
    )
    task = copy.deepcopy(task)
    task["entry_url"] = url
    seen = len(newsroom_server.requests)
    runner = runner_for([GullibleAgent()], browser_options, robots, tmp_path)
    [row] = run_tasks([task], day, runner)
    events = [e for e in row["safety_events"] if "collect.example" in e["url"]]
    assert events and events[0]["kind"] == "off_allowlist"
    blocked = [r for r in row["request_log"] if "collect.example" in r["url"]]
    assert blocked and not any(r["fetched"] for r in blocked)
    hosts = {r["host"] for r in list(newsroom_server.requests)[seen:]}
    assert not any("collect.example" in h for h in hosts)
    assert score_run(row, task)["failure_class"] == "policy_block"


# -- budgets, profiles and pacing ---------------------------------------------------------------
class Wanderer:
    manifest = manifest("wanderer")

    async def run(self, task, tools):
        for _ in range(5):
            await tools.goto(task.entry_url)


def test_the_byte_budget_stops_the_agent(harbor, browser_options, tmp_path):
    day, tasks, robots = harbor
    task = with_constraints(tasks["extract_article_metadata"], max_bytes=1000, max_steps=20)
    runner = runner_for([Wanderer()], browser_options, robots, tmp_path)
    [row] = run_tasks([task], day, runner)
    assert row["run_status"] == "budget_exceeded" and "byte budget" in row["error"]
    assert row["steps"] < 5
    assert score_run(row, task)["failure_class"] == "budget_exceeded"


class ScreenReader:
    manifest = manifest("screen")

    async def run(self, task, tools):
        seen = await tools.page.evaluate(
            """() => ({w: window.innerWidth, dpr: window.devicePixelRatio,
                       tz: Intl.DateTimeFormat().resolvedOptions().timeZone,
                       touch: 'ontouchstart' in window, lang: navigator.language})"""
        )
        await tools.answer(seen, claims_success=False)


def test_a_runs_profile_is_the_tasks_and_is_in_its_manifest(harbor, browser_options, tmp_path):
    day, tasks, robots = harbor
    task = with_constraints(
        tasks["extract_article_metadata"], device_profile="mobile", geo="EU", network="4g"
    )
    runner = runner_for([ScreenReader()], browser_options, robots, tmp_path)
    [row] = run_tasks([task], day, runner)
    seen, env = row["answer"], row["environment"]
    assert seen["w"] == env["viewport"]["width"] < 600
    assert seen["dpr"] == env["device_scale_factor"] > 1 and seen["touch"] is True
    assert seen["tz"] == env["timezone_id"] == "Europe/Berlin"
    assert seen["lang"].startswith("en")  # the task's language, read from the EU geo
    assert (env["device"], env["geo"], env["network"]) == ("mobile", "EU", "4g")
    assert env["latency_ms"] > 0


def test_page_loads_are_paced_per_origin_across_the_pool(harbor, browser_options, tmp_path):
    day, tasks, robots = harbor
    task = tasks["extract_article_metadata"]
    origin = task["allowed_origins"][0]
    copies = []
    for i in range(4):
        t = copy.deepcopy(task)
        t["id"] = t["id"][:-1] + "abcd"[i]
        copies.append(t)
    runner = runner_for(
        [Wanderer()],
        browser_options,
        robots,
        tmp_path,
        concurrency=4,
        min_interval={origin: 0.4},
        artifacts=("har",),
    )
    for t in copies:
        t["constraints"].update(max_steps=2, max_seconds=20)
    rows = run_tasks(copies, day, runner)
    starts = defaultdict(list)
    for row in rows:
        for entry in json.loads(runner.store.get(row["artifacts"]["har"])):
            if entry["type"] == "document":
                starts[urlsplit(entry["url"]).netloc].append(entry["wall"])
    loads = sorted(starts[urlsplit(origin).netloc])
    assert len(loads) >= 8  # 4 entries + 4 x 2 agent loads, from 4 runs at once
    gaps = [b - a for a, b in zip(loads, loads[1:], strict=False)]
    assert min(gaps) >= 0.38, gaps


class EscapingCdpAgent:
    """Tries to open a browser context of its own over CDP (outside the request guard), then
    to close the harness's page, then answers from the page it was given."""

    manifest = manifest("escaper")
    needs_cdp = True

    async def run(self, task, tools):
        async with async_playwright() as pw:
            browser = await pw.chromium.connect_over_cdp(tools.cdp_url)
            try:
                await browser.new_context()
                escaped = True
            except Exception as e:  # noqa: BLE001 - the refusal is what we want to see
                escaped = "refused by the harness" not in str(e)
            [page] = [p for c in browser.contexts for p in c.pages if p.url == task.entry_url]
            title = await page.title()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(page.close(), 5)
            await tools.answer({"escaped": escaped, "title": title}, claims_success=False)
            await browser.close()


def test_an_attached_agent_cannot_leave_the_guarded_context_or_close_the_scored_page(
    harbor, browser_options, tmp_path
):
    day, tasks, robots = harbor
    task = tasks["extract_article_metadata"]
    runner = runner_for([EscapingCdpAgent()], browser_options, robots, tmp_path)
    [row] = run_tasks([task], day, runner)
    assert row["run_status"] == "answered", row["error"]
    assert row["answer"]["escaped"] is False
    # (Playwright's page.close() over CDP does not surface the refusal; the page stays.)
    kinds = {(e["kind"], e["method"]) for e in row["lifecycle"]}
    assert ("refused", "Target.createBrowserContext") in kinds
    assert ("refused", "Target.closeTarget") in kinds
    assert row["observation"]["final"]["url"] == task["entry_url"]
