"""The browser-use adapter end to end: Browser Use attached over CDP to real Chromium on the
real newsroom, scored from the page the harness keeps; the only stand-in is the model endpoint,
a test double for a hosted model (tests/support/openai_double.py) that answers from scripts
reading what Browser Use sent it."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.async_api import async_playwright

from newsbench_dagster.core.agents.protocol import AgentManifest, AgentTask, build_agent
from newsbench_dagster.core.agents.tools import BrowserTools
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.errors import ModelEndpointError
from newsbench_dagster.core.harness import runner as runner_module
from newsbench_dagster.core.harness.observe import observe
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.scoring.score import score_run
from tests.support.model_adapters import (
    FAKE_KEY,
    KEY_ENV,
    NoBrowserTools,
    assert_no_key_in_files,
)
from tests.support.net import free_port
from tests.support.openai_double import OpenAIDouble, reply, text_of

# Browser Use over CDP in real Chromium: about 30 s on two busy cores.
pytestmark = pytest.mark.heavy(30)

# Browser Use's model reads the lead from the page's JSON-LD with its `evaluate` action, then
# reports it with `done`; the script finds the evaluate result in what Browser Use sent back.
LEAD_JS = (
    "(function(){try{for(const s of document.querySelectorAll("
    "'script[type=\"application/ld+json\"]')){const d=JSON.parse(s.textContent);"
    "const nodes=Array.isArray(d)?d:(d['@graph']||[d]);for(const n of nodes){"
    "if(String(n['@type']).includes('ItemList')){const f=n.itemListElement[0];"
    "const it=f.item||{};return 'NBLEAD'+JSON.stringify({headline:f.name||it.name,"
    "url:f.url||it.url})+'NBEND';}}}return 'no list'}catch(e){return 'Error: '+e.message}})()"
)


def browser_use_model(request: dict) -> dict:
    assert request["response_format"]["type"] == "json_schema"  # Browser Use's structured step
    found = re.search(r"NBLEAD(\{.*?\})NBEND", text_of(request["messages"]))
    brain = {"evaluation_previous_goal": "ok", "memory": "", "next_goal": "read the lead"}
    if found is None:
        action = {"evaluate": {"code": LEAD_JS}}
    else:
        action = {"done": {"text": found.group(1), "success": True}}
    return reply(json.dumps({**brain, "action": [action]}), usage={"prompt_tokens": 500})


def _bu_manifest(base_url: str, **params) -> AgentManifest:
    return AgentManifest(
        name="bu",
        version="t",
        adapter="browser_use",
        model="double-bu",
        params={
            "base_url": base_url,
            "api_key_env": KEY_ENV,
            "retries": 0,
            "timeout_s": 20,
            **params,
        },
    )


async def _run_on_own_chromium(browser_options, task, manifest, profile_dir) -> dict:
    """The runner's part played by hand: Chromium launched with a CDP port, the entry page
    loaded and observed, the agent run, the page observed again before anything closes."""
    port = free_port()
    kwargs = browser_options.launch_kwargs()
    kwargs["args"] = [*kwargs["args"], f"--remote-debugging-port={port}"]
    async with async_playwright() as pw:
        context = await pw.chromium.launch_persistent_context(
            str(profile_dir), **kwargs, **browser_options.context_kwargs()
        )
        try:
            page = context.pages[0] if context.pages else await context.new_page()
            await page.goto(task["entry_url"], wait_until="domcontentloaded")
            entry = await observe(page)
            constraints = task["constraints"]
            tools = BrowserTools(
                page, max_steps=constraints["max_steps"], max_tokens=constraints["max_tokens"]
            )
            tools.cdp_url = f"http://127.0.0.1:{port}"
            agent = build_agent(manifest)
            size = "[innerWidth, innerHeight, devicePixelRatio]"
            before = await page.evaluate(size)
            started = datetime.now(UTC)
            await asyncio.wait_for(agent.run(AgentTask.from_task(task), tools), 60)
            still_open = not page.is_closed() and await page.evaluate(size) == before
            final = await observe(page)
        finally:
            await context.close()
    answers = tools.trajectory.answers
    row = {
        "run_id": "r-standalone",
        "task_id": task["id"],
        "intent": task["intent"],
        "run_status": "answered" if answers else "no_answer",
        "answer": answers[-1].value if answers else None,
        "answers": [
            {"value": a.value, "seconds": a.seconds, "claims_success": a.claims_success}
            for a in answers
        ],
        "answer_seconds": answers[-1].seconds if answers else None,
        "self_reported_success": answers[-1].claims_success if answers else None,
        "observation": {"entry": entry, "final": final, "probes": []},
        "started_at": started,
        "steps": tools.steps,
        "tokens": tools.trajectory.tokens,
        "requests": 1,
        "safety_events": [],
        "trajectory": tools.trajectory.steps,
    }
    return {"row": row, "still_open": still_open, "describe": agent.describe()}


def test_browser_use_over_cdp_answers_from_the_page_the_harness_keeps(
    harbor, browser_options, tmp_path, monkeypatch
):
    """Standalone (our own CDP-launched Chromium) until the runner hands out cdp_url."""
    _, tasks, _ = harbor
    task = next(t for t in tasks if t["intent"] == "find_top_headline")
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    monkeypatch.delenv("ANONYMIZED_TELEMETRY", raising=False)
    # This process's temporary files in a folder of their own: other test workers run Browser
    # Use at the same time, and their scratch in the shared /tmp is not this run's.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    before = time.time() - 1
    with OpenAIDouble(browser_use_model) as model:
        out = asyncio.run(
            _run_on_own_chromium(browser_options, task, _bu_manifest(model.base_url), tmp_path)
        )
    assert not model.errors, model.errors
    row = out["row"]
    score = score_run(row, task)
    assert score["success"], (row["answer"], score["checker"])
    assert row["self_reported_success"] is True
    # Browser Use let go of the page without closing it or changing its viewport.
    assert out["still_open"]
    # Two model calls (evaluate, done): no judge call after done.
    assert len(model.completions) == 2
    assert {r.headers.get("authorization") for r in model.completions} == {f"Bearer {FAKE_KEY}"}
    assert row["tokens"] == model.tokens_sent == 2 * (500 + 20)
    assert [s["tool"] for s in row["trajectory"]] == ["bu.evaluate", "answer"]
    assert FAKE_KEY not in json.dumps(row, default=str)
    d = out["describe"]
    assert d["use_judge"] is False and d["use_vision"] is False and d["telemetry"] is False
    assert d["browser_use_version"].startswith("0.13.")
    assert "ANONYMIZED_TELEMETRY" not in os.environ  # set only while Browser Use was built
    # Its scratch files (storage state, step screenshots) went with the run.
    assert not [p for p in scratch.iterdir() if _bu_scratch(p, before)]


def _bu_scratch(path: Path, since: float) -> bool:
    names = ("newsbench-bu-", "browser_use_agent_", "browser-use-user-data-dir-")
    return path.name.startswith(names) and path.stat().st_mtime >= since


def test_browser_use_without_cdp_url_fails_clearly(harbor, monkeypatch):
    _, tasks, _ = harbor
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    agent = build_agent(_bu_manifest("http://127.0.0.1:9/v1"))
    assert getattr(agent, "needs_cdp", False) is True
    tools = NoBrowserTools()
    tools.cdp_url = None  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match="needs tools.cdp_url"):
        asyncio.run(agent.run(AgentTask.from_task(tasks[0]), tools))  # type: ignore[arg-type]


@pytest.mark.skipif(
    "needs_cdp" not in inspect.getsource(runner_module),
    reason="the runner does not hand adapters a cdp_url (needs_cdp support) in this checkout",
)
def test_browser_use_through_the_runner(harbor, browser_options, tmp_path, monkeypatch):
    """Written against the runner's coming CDP support: the runner launches the run's
    Chromium, gives the adapter tools.cdp_url, and scores the page it kept."""
    day, tasks, robots = harbor
    task = next(t for t in tasks if t["intent"] == "find_top_headline")
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    with OpenAIDouble(browser_use_model) as model:
        runner = Runner(
            [build_agent(_bu_manifest(model.base_url))],
            options=browser_options,
            robots=robots,
            store=LocalArtifactStore(tmp_path),
            settings=RunSettings(during_every_s=30),
        )
        (row,) = run_tasks([task], day, runner)
    score = score_run(row, task)
    assert row["run_status"] == "answered", row["error"]
    assert score["success"], (row["answer"], score["checker"])
    assert row["observation"]["final"]["url"]  # observed after Browser Use let go
    assert row["tokens"] == model.tokens_sent
    assert FAKE_KEY not in json.dumps(row, default=str)
    assert "bu.evaluate" in [s["tool"] for s in row["trajectory"]]
    settings = row["environment"]["agent_settings"]
    assert settings["use_judge"] is False and settings["use_vision"] is False
    assert settings["browser_use_version"].startswith("0.13.")
    assert row["adapter"]["browser_use"]["max_steps"] == task["constraints"]["max_steps"]
    assert_no_key_in_files(tmp_path)


def test_browser_use_with_an_unreachable_model_raises_an_environment_error(
    harbor, browser_options, tmp_path, monkeypatch
):
    _, tasks, _ = harbor
    task = next(t for t in tasks if t["intent"] == "find_top_headline")
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    manifest = _bu_manifest(f"http://127.0.0.1:{free_port()}/v1", max_failures=1)
    with pytest.raises(ModelEndpointError, match="failed: ModelProviderError") as e:
        asyncio.run(_run_on_own_chromium(browser_options, task, manifest, tmp_path))
    assert e.value.environmental and FAKE_KEY not in str(e.value)
