"""Replay (issue 7): a newsroom site recorded by real Chromium, then replayed with the
newsroom untouched or stopped. The reference agent gives the same answers as live; the
newsroom receives no request during replay; any other host fails to resolve; a gap in the
recording is the environment's, never the agent's."""

from __future__ import annotations

import asyncio
import copy
import json
from datetime import UTC, datetime

import pytest

from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.replay.recorder import record
from newsbench_dagster.core.replay.replayer import Recording
from newsbench_dagster.core.scoring.score import score_run
from newsbench_dagster.core.tasks.poll import poll_site
from newsbench_dagster.core.tasks.produce import make_tasks
from newsbench_dagster.core.web.network import Fetcher, RobotsRules, Routing
from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom

pytestmark = pytest.mark.heavy(20)  # about 20 s on two busy cores

FROZEN_AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
READ_INTENTS = (
    "find_top_headline",
    "extract_article_metadata",
    "find_author_and_time",
    "identify_topic_page",
    "locate_factbox",
)
REFERENCE = AgentManifest(name="reference", version="0.1.0", adapter="reference")


def _runner(options, robots, store, **settings) -> Runner:
    return Runner(
        [build_agent(REFERENCE)],
        options=options,
        robots=robots,
        store=store,
        settings=RunSettings(artifacts=("har",), pace=False, **settings),
    )


@pytest.fixture(scope="module")
def world(registry, tmp_path_factory):
    """Harbor's read tasks run live on a frozen newsroom, then every page those runs loaded
    recorded into one WARC. The newsroom is left running; tests may stop it."""
    tmp = tmp_path_factory.mktemp("replay")
    server = NewsroomServer(Newsroom(seed=7), clock=FixedClock(FROZEN_AT)).start()
    routing = Routing.via_proxy(server.address)
    options = BrowserOptions(routing=routing)
    day = FROZEN_AT.date()
    with Fetcher(routing, registry.allowed_origins) as f:
        robots = RobotsRules.fetch(f, registry.allowed_origins)
        rows = poll_site(registry.get("harbor"), f, None, day)
    tasks = make_tasks(registry.get("harbor"), day, rows, articles_per_site=2, intents=READ_INTENTS)
    store = LocalArtifactStore(tmp / "live")
    live = run_tasks(tasks, day, _runner(options, robots, store))
    pages: list[str] = []
    for t in tasks:
        pages.append(t["entry_url"])
    for row in live:
        for entry in json.loads(store.get(row["artifacts"]["har"])):
            if entry["type"] == "document" and not entry.get("blocked"):
                pages.append(entry["url"])
    warc = tmp / "harbor.warc.gz"
    summary = asyncio.run(record(list(dict.fromkeys(pages)), warc, options, settle_ms=100))
    assert not summary.failures, summary.failures
    yield {
        "server": server,
        "tasks": tasks,
        "live": {r["task_id"]: r for r in live},
        "warc": warc,
        "day": day,
        "tmp": tmp,
        "robots": robots,
    }
    server.stop()


def _replayed(tasks, warc):
    out = copy.deepcopy(tasks)
    for t in out:
        t["replay"] = {"recording": str(warc)}
    return out


def test_the_reference_agent_gives_the_same_answers_in_replay_and_the_newsroom_sees_nothing(
    world,
):
    server, tasks = world["server"], world["tasks"]
    by_id = {t["id"]: t for t in tasks}
    assert {r["task_id"] for r in world["live"].values()} == set(by_id)
    assert all(score_run(r, by_id[r["task_id"]])["success"] for r in world["live"].values())

    seen = len(server.requests)
    store = LocalArtifactStore(world["tmp"] / "replayed")
    # The live robots rules are deliberately not used: a replayed run obeys the recording's.
    runner = _runner(BrowserOptions(routing=Routing.via_proxy(server.address)), None, store)
    rows = run_tasks(_replayed(tasks, world["warc"]), world["day"], runner)
    assert len(server.requests) == seen, "the newsroom was asked for something during replay"

    assert len(rows) == len(tasks) >= 5
    for row in rows:
        task = by_id[row["task_id"]]
        live = world["live"][row["task_id"]]
        assert row["run_status"] == "answered", (task["intent"], row["error"])
        assert row["answer"] == live["answer"], task["intent"]
        score = score_run(row, {**task, "replay": {"recording": str(world["warc"])}})
        assert score["success"], (task["intent"], score["checker"])
        assert score["replayed"] is True
        # Labelled and logged: the recording, its clock, every request tagged.
        replay = row["replay"]
        assert replay["recording"] == str(world["warc"]) and len(replay["sha256"]) == 64
        assert replay["clock"].startswith("2026-11-30")
        assert replay["coverage"]["counts"].get("exact", 0) > 0
        assert replay["agent_misses"] == 0, replay["coverage"]["misses"]
        lines = store.get(row["artifacts"]["replay_log"]).decode().splitlines()
        log = [json.loads(line) for line in lines]
        assert {e["tag"] for e in log} <= {"exact", "fuzzy", "search", "blocked", "miss"}
        assert any(e["actor"] == "agent" for e in log)
        assert all(e["rule"] for e in log)


def test_pages_see_the_recording_clock_and_other_hosts_do_not_resolve(world):
    recording = Recording.open(world["warc"])
    server = world["server"]
    seen = len(server.requests)

    async def go():
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import async_playwright

        options = BrowserOptions(routing=Routing.offline())
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(**options.launch_kwargs())
            # Without the replay, the offline browser reaches nothing: not even the newsroom.
            bare = await browser.new_page()
            with pytest.raises(PlaywrightError, match="ERR_NAME_NOT_RESOLVED"):
                await bare.goto("http://harbor-herald.test/")
            context = await browser.new_context(**options.context_kwargs())
            session = recording.session()
            await session.attach(context, recording.clock_at("http://harbor-herald.test/"))
            page = await context.new_page()
            resp = await page.goto("http://harbor-herald.test/")
            now = await page.evaluate("Date.now()")
            fetched = await page.evaluate(
                "fetch('http://rhein-rundschau.test/').then(r => 'answered', e => 'failed')"
            )
            not_found = await page.goto("http://harbor-herald.test/no/such/page")
            body = await page.content()
            with pytest.raises(PlaywrightError, match="ERR_NAME_NOT_RESOLVED"):
                await page.goto("http://example.com/")
            await browser.close()
            return resp.status, now, fetched, not_found.status, body, session.log

    status, now, fetched, nf_status, body, log = asyncio.run(go())
    assert len(server.requests) == seen
    assert status == 200
    clock = datetime.fromtimestamp(now / 1000, UTC)
    assert abs((clock - recording.clock_at("http://harbor-herald.test/")).total_seconds()) < 60
    assert abs((clock - datetime.now(UTC)).total_seconds()) > 3600  # not today's clock
    assert fetched == "failed"
    # Unrecorded pages of a recorded site get the site's own recorded 404 page.
    assert nf_status == 404 and "harbor" in body.lower()
    tags = {e["url"]: (e["tag"], e["rule"]) for e in log}
    assert tags["http://example.com/"][0] == "miss"
    assert "not in the recording" in tags["http://example.com/"][1]
    assert tags["http://harbor-herald.test/no/such/page"][0] == "miss"


def test_with_the_newsroom_stopped_replay_still_solves_and_a_gap_is_the_environments(world):
    world["server"].stop()
    tasks = _replayed(world["tasks"], world["warc"])
    lead = next(t for t in tasks if t["intent"] == "find_top_headline")
    gap = copy.deepcopy(lead)
    gap["id"] = "t-" + "e" * 16
    gap["entry_url"] = "http://harbor-herald.test/never/recorded"
    missing = copy.deepcopy(lead)
    missing["id"] = "t-" + "f" * 16
    missing["replay"] = {"recording": str(world["tmp"] / "nope.warc.gz")}
    store = LocalArtifactStore(world["tmp"] / "stopped")
    runner = _runner(BrowserOptions(routing=Routing.offline()), None, store)
    rows = {r["task_id"]: r for r in run_tasks([lead, gap, missing], world["day"], runner)}

    assert rows[lead["id"]]["answer"] == world["live"][lead["id"]]["answer"]
    assert score_run(rows[lead["id"]], lead)["success"]
    # The recording lacks the entry page: a replay gap (environment), with the page named.
    assert rows[gap["id"]]["env_failure"] == "replay_gap"
    assert "never/recorded" in rows[gap["id"]]["error"]
    s = score_run(rows[gap["id"]], gap)
    assert s["excluded"] and s["failure_class"] == "replay_gap"
    assert rows[gap["id"]]["replay"]["coverage"]["missing_pages"] == [gap["entry_url"]]
    # A task naming a recording that does not exist is bad input, named.
    assert rows[missing["id"]]["env_failure"] == "invalid_task"
    assert "nope.warc.gz" in rows[missing["id"]]["error"]


def _lead_replay(world, name="lead"):
    tasks = _replayed(world["tasks"], world["warc"])
    return next(t for t in tasks if t["intent"] == "find_top_headline")


def test_grading_layers_judge_a_replayed_run_and_reject_a_wrong_answer(world):
    lead = _lead_replay(world)
    store = LocalArtifactStore(world["tmp"] / "graded")
    runner = _runner(BrowserOptions(routing=Routing.offline()), None, store)
    [row] = run_tasks([lead], world["day"], runner)
    headline = world["live"][lead["id"]]["answer"]["headline"]
    trace = [
        {"id": "no_signup", "forbid": {"method": "POST", "url": "/newsletter"}},
        {"id": "front_page_recorded", "require": {"method": "GET", "url": r"\.test/$"}},
    ]
    right = {
        "extract": {"headline": {"path": "headline"}},
        "require": [{"field": "headline", "op": "equals", "value": headline}],
        "checks": [
            {
                "id": "has_url",
                "question": "Links the story?",
                "weight": 1,
                "program": {"field": "url", "op": "matches", "value": "^http://harbor"},
            }
        ],
        "trace": trace,
    }
    s = score_run(row, {**lead, "grading": right})
    assert s["success"] and s["checker"]["grading"]["status"] == "pass"
    assert s["checker"]["grading"]["score"] == 1.0

    wrong = {**right, "require": [{"field": "headline", "op": "equals", "value": "Not it"}]}
    s = score_run(row, {**lead, "grading": wrong})
    assert not s["success"] and s["accuracy"] == 0.0
    assert s["checker"]["grading"]["status"] == "fail"

    # The agent's own requests are what the trace judges: its front-page load was a
    # recorded hit; a rule forbidding it fails the run.
    banned = {**right, "trace": [{"id": "no_front", "forbid": {"url": r"\.test/$"}}]}
    s = score_run(row, {**lead, "grading": banned})
    assert not s["success"] and s["failure_class"] == "planning"

    # A required question with no program and no judge is unverified: never a pass.
    ask = {**right, "checks": [{"id": "tone", "question": "Neutral?", "required": True}]}
    s = score_run(row, {**lead, "grading": ask})
    assert s["excluded"] and s["success"] is None
    assert "unverified" in s["checker"]["reason"]


def test_an_agent_attached_over_cdp_is_replayed_too(world):
    from newsbench_dagster.paths import PROJECT_ROOT

    example = str(PROJECT_ROOT / "examples" / "cdp_agent.py")
    manifest = AgentManifest(
        name="cdp-example",
        version="1",
        adapter="command",
        params={
            "command": [
                "{python}",
                example,
                "--cdp-url",
                "{cdp_url}",
                "--answer-file",
                "{answer_file}",
                "--prompt",
                "{prompt}",
                "--url",
                "{url}",
            ],
            "timeout_s": 30,
        },
    )
    lead = _lead_replay(world)
    seen = len(world["server"].requests) if world["server"].running else None
    runner = Runner(
        [build_agent(manifest)],
        options=BrowserOptions(routing=Routing.offline()),
        robots=None,
        store=LocalArtifactStore(world["tmp"] / "cdp"),
        settings=RunSettings(artifacts=(), pace=False),
    )
    [row] = run_tasks([lead], world["day"], runner)
    assert row["run_status"] == "answered", row["error"]
    assert row["answer"]["headline"] == world["live"][lead["id"]]["answer"]["headline"]
    assert row["replay"]["agent_misses"] == 0
    assert score_run(row, lead)["success"]
    if seen is not None:
        assert len(world["server"].requests) == seen


def test_a_task_with_malformed_grading_is_refused_naming_the_field(world):
    from newsbench_dagster.core.tasks.contract import validation_errors

    lead = _lead_replay(world)
    bad = {**lead, "grading": {"require": [{"field": "headline", "op": "equal", "value": 1}]}}
    [problem] = validation_errors(bad)
    assert "$.grading.require[0].op" in problem and "equal" in problem
    assert validation_errors({**lead, "replay": {"recording": ""}})  # an empty path is refused


def _in_replay(recording: Recording, steps):
    """`steps(page)` in a page of an offline browser answered by a replay session of
    `recording`; its result and the session's log."""

    async def go():
        from playwright.async_api import async_playwright

        options = BrowserOptions(routing=Routing.offline())
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(**options.launch_kwargs())
            context = await browser.new_context(**options.context_kwargs())
            session = recording.session()
            await session.attach(context)
            try:
                return await steps(await context.new_page()), session.log
            finally:
                await browser.close()

    return asyncio.run(go())


def test_a_warc_from_another_tool_replays(tmp_path):
    """WARC/1.0 as a crawler writes it: no request records, a gzip-encoded body, chunked
    transfer, a session cookie. Replay decodes the body, never serves the cookie, and answers
    the page's own noisy re-request."""
    import gzip as gz
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    html = b"<html><head><title>Crawled</title></head><body><h1>From a crawler</h1></body></html>"
    packed = gz.compress(html)
    chunked = b"%x\r\n" % len(packed) + packed + b"\r\n0\r\n\r\n"
    path = tmp_path / "crawler.warc.gz"
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True, warc_version="WARC/1.0")
        headers = StatusAndHeaders(
            "200 OK",
            [
                ("Content-Type", "text/html"),
                ("Content-Encoding", "gzip"),
                ("Transfer-Encoding", "chunked"),
                ("Set-Cookie", "session=abc"),
            ],
            protocol="HTTP/1.1",
        )
        rec = writer.create_warc_record(
            "http://crawled.test/page", "response", payload=BytesIO(chunked), http_headers=headers
        )
        writer.write_record(rec)

    async def steps(page):
        await page.goto("http://crawled.test/page?utm_source=feed")
        return await page.locator("h1").inner_text(), await page.context.cookies()

    (text, cookies), log = _in_replay(Recording(path), steps)
    assert text == "From a crawler"
    assert cookies == []  # a recorded Set-Cookie is not replayed into the reader's browser
    assert log[0]["tag"] == "fuzzy" and "utm_" in log[0]["rule"]


def test_recorded_redirects_are_followed_inside_the_recording(tmp_path):
    from newsbench_dagster.core.replay.recorder import WarcRecorder

    h = "http://harbor-herald.test"
    path = tmp_path / "redirects.warc.gz"
    rec = WarcRecorder(path)
    html = [("Content-Type", "text/html")]
    rec.exchange("GET", f"{h}/old", [], None, 301, "Moved", [("Location", "/new")], b"")
    rec.exchange("GET", f"{h}/new", [], None, 200, "OK", html, b"<h1>New home</h1>")
    rec.exchange("GET", f"{h}/api/v1", [], None, 302, "Found", [("Location", f"{h}/api/v2")], b"")
    rec.exchange("GET", f"{h}/api/v2", [], None, 200, "OK", [], b"v2 data")
    rec.close()

    async def steps(page):
        await page.goto(f"{h}/old")
        seen = (page.url, await page.locator("h1").inner_text())
        return seen, await page.evaluate(f"fetch('{h}/api/v1').then(r => r.text())")

    ((url, heading), data), log = _in_replay(Recording(path), steps)
    # A navigation's redirect is a real one (the page ends on the new URL), its hop answered
    # from the recording too; a call's redirect chain is resolved inside the recording.
    assert (url, heading) == (f"{h}/new", "New home")
    assert data == "v2 data"
    assert [(e["url"], e["status"]) for e in log] == [
        (f"{h}/old", 301),
        (f"{h}/new", 200),
        (f"{h}/api/v1", 200),
    ]
    assert log[2]["hops"] == [f"{h}/api/v2"]
