"""The openai-tools adapter end to end: real Chromium, the real newsroom, the real runner and
scoring; the only stand-in is the model endpoint, a test double for a hosted model
(tests/support/openai_double.py) that answers from scripts reading what the adapter sent it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from newsbench_dagster.core.agents.adapters.openai_tools import TOOLS
from newsbench_dagster.core.agents.protocol import (
    AgentManifest,
    AgentTask,
    build_agent,
    load_manifest,
)
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.errors import ModelEndpointError, ModelOutputFailure
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
from tests.support.openai_double import HttpError, OpenAIDouble, calls, reply, tool_call
from tests.support.paths import REPO


# -- scripts: a "model" that reads what the loop sent back ----------------------------------------
def _results_by_tool(request: dict) -> dict[str, list]:
    """The tool results in a request, keyed by the tool the assistant called (matched through
    tool_call ids, as a real model sees them)."""
    names = {}
    for m in request["messages"]:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
    out: dict[str, list] = {}
    for m in request["messages"]:
        if m.get("role") == "tool":
            try:
                content = json.loads(m["content"])
            except ValueError:
                content = m["content"]
            out.setdefault(names.get(m["tool_call_id"], "?"), []).append(content)
    return out


def _usage(request: dict) -> dict:
    # Different per turn, so the adapter's sum is checked against what was really sent.
    n = len(request["messages"])
    return {"prompt_tokens": 90 + 13 * n, "completion_tokens": 7 + n}


def reading_model(request: dict) -> dict:
    """Turn 1: read the page (plus an unknown tool and arguments that are not JSON). Turn 2:
    answer from the read_page result it got back (right, or deliberately wrong when the
    model id says so). Turn 3: finish (or just stop talking, for the wrong model)."""
    wrong = request["model"].endswith("wrong")
    seen = _results_by_tool(request)
    usage = _usage(request)
    if not seen:
        return calls(
            tool_call("read_page"),
            tool_call("teleport", {"to": "the answer"}),
            tool_call("goto", '{"url": "http://harbor-herald.test/'),  # cut-off JSON
            tool_call("accessibility_snapshot"),
            usage=usage,
        )
    if "answer" in seen:
        return reply("Answered.", usage=usage) if wrong else calls(tool_call("finish"), usage=usage)
    user = request["messages"][1]["content"]
    if wrong:  # its results were cut short (max_result_bytes): it makes something up, and
        # goes to the page the task named (grounded) and to one nobody showed it (invented)
        value = {"headline": "Nothing happened today", "url": "http://harbor-herald.test/"}
        return calls(
            tool_call("goto", {"url": user.split()[-1]}),
            tool_call("goto", {"url": "http://harbor-herald.test/2026/made-up-story"}),
            tool_call("answer", {"value": value, "claims_success": True}),
            usage=usage,
        )
    elif "lead story" in user:
        lead = seen["read_page"][0]["listing"][0]
        value = {"headline": lead["headline"], "url": lead["url"]}
    else:
        record = seen["read_page"][0]
        value = {
            "headline": record["headline"],
            "authors": record["authors"],
            "published": record["published"]["utc"],
            "modified": (record.get("modified") or {}).get("utc"),
        }
    return calls(tool_call("answer", {"value": value, "claims_success": True}), usage=usage)


def _manifest(name: str, base_url: str, **params) -> AgentManifest:
    return AgentManifest(
        name=name,
        version="t",
        adapter="openai_tools",
        model=f"double-{name}",
        params={"base_url": base_url, "api_key_env": KEY_ENV, **params},
    )


@pytest.fixture(scope="module")
def openai_batch(harbor, browser_options, tmp_path_factory):
    """Both tasks run by: a model that answers right, one that answers wrong (with small tool
    results, so truncation shows), one whose endpoint refuses the key (echoing it back), and
    one whose endpoint is not there."""
    day, tasks, robots = harbor
    store_dir = tmp_path_factory.mktemp("artifacts")
    with pytest.MonkeyPatch.context() as mp, OpenAIDouble(reading_model) as model:
        mp.setenv(KEY_ENV, FAKE_KEY)
        with OpenAIDouble(HttpError(401, f"Incorrect API key provided: {FAKE_KEY}")) as refusing:
            agents = [
                build_agent(_manifest("right", model.base_url)),
                build_agent(_manifest("wrong", model.base_url, max_result_bytes=600)),
                build_agent(_manifest("refused", refusing.base_url)),
                build_agent(
                    _manifest(
                        "nowhere",
                        f"http://127.0.0.1:{free_port()}/v1",
                        retries=1,
                        retry_backoff_s=0.05,
                    )
                ),
            ]
            runner = Runner(
                agents,
                options=browser_options,
                robots=robots,
                store=LocalArtifactStore(store_dir),
                settings=RunSettings(concurrency=4, during_every_s=30),
            )
            rows = run_tasks(tasks, day, runner)
    by_id = {t["id"]: t for t in tasks}
    scored = {r["run_id"]: score_run(r, by_id[r["task_id"]]) for r in rows}
    return rows, scored, model, refusing, store_dir


def _runs(batch, agent: str) -> list[tuple[dict, dict]]:
    rows, scored, *_ = batch
    out = [(r, scored[r["run_id"]]) for r in rows if r["agent_name"] == agent]
    assert len(out) == 2, [r["error"] for r in rows]
    return out


def _conversation(model: OpenAIDouble, agent: str, entry_url: str):
    return [
        r
        for r in model.completions
        if r.body["model"] == f"double-{agent}"
        and r.body["messages"][1]["content"].split()[-1] == entry_url  # "...open at <url>"
    ]


# -- openai-tools -------------------------------------------------------------------------------
def test_openai_tools_passes_tool_results_back_and_the_right_answer_scores(openai_batch):
    _, _, model, _, _ = openai_batch
    assert not model.errors, model.errors
    for run, score in _runs(openai_batch, "right"):
        assert run["run_status"] == "answered", run["error"]
        assert score["success"], (run["intent"], score["checker"])
        assert run["self_reported_success"] is True
        tools_used = [s["tool"] for s in run["trajectory"]]
        assert tools_used[:1] == ["read_page"] and "answer" in tools_used
        # The model got the task as a person would ask it, with the entry URL, and the tools.
        convo = _conversation(model, "right", run["entry_url"])
        assert len(convo) == 3  # read, answer, finish
        first = convo[0].body
        assert first["tool_choice"] == "auto"
        assert {t["function"]["name"] for t in first["tools"]} == set(TOOLS)
        assert first["messages"][0]["role"] == "system"
        assert run["entry_url"] in first["messages"][1]["content"]


def test_openai_tools_wrong_answer_is_rejected_by_the_oracle(openai_batch):
    for run, score in _runs(openai_batch, "wrong"):
        assert run["run_status"] == "answered", run["error"]
        assert run["answer"] and not score["success"], run["answer"]
        assert score["failure_class"] in ("wrong_target", "false_success_claim", "perception")
        assert score["claim_mismatch"] is True  # it claimed success


def test_openai_tools_counts_the_tokens_the_endpoint_reported(openai_batch):
    _, _, model, _, _ = openai_batch
    for agent in ("right", "wrong"):
        for run, _ in _runs(openai_batch, agent):
            convo = _conversation(model, agent, run["entry_url"])
            sent = sum(
                u["prompt_tokens"] + u["completion_tokens"]
                for u in map(_usage, (r.body for r in convo))
            )
            assert run["tokens"] == sent > 0


def test_openai_tools_records_and_survives_malformed_tool_calls(openai_batch):
    _, _, model, _, _ = openai_batch
    for run, _ in _runs(openai_batch, "right"):
        bad = [s for s in run["trajectory"] if s["tool"] == "invalid_tool_call"]
        assert [b["args"]["name"] for b in bad] == ["teleport", "goto"]
        assert "unknown tool 'teleport'" in bad[0]["error"]
        assert "not valid JSON" in bad[1]["error"]
        # ...and the model was told, in the tool results of its next turn.
        second = _conversation(model, "right", run["entry_url"])[1].body["messages"]
        errors = [json.loads(m["content"]) for m in second if m["role"] == "tool"]
        assert [e.get("error", "")[:12] for e in errors[1:3]] == ["unknown tool", "goto: argume"]
        assert run["run_status"] == "answered"  # the run went on to answer
        assert run["adapter"]["model_loop"]["invalid_tool_calls"] == 2
        settings = run["environment"]["agent_settings"]
        assert settings["model"] == "double-right" and settings["api_key_env"] == KEY_ENV


def test_the_loop_counts_the_tool_results_each_prompt_held_and_the_gotos_it_was_shown(
    openai_batch,
):
    _, _, model, _, _ = openai_batch
    for run, _ in _runs(openai_batch, "wrong"):
        loop = run["adapter"]["model_loop"]
        # Four results of the first turn's calls reached the second prompt, seven the third.
        convo = _conversation(model, "wrong", run["entry_url"])
        held = [sum(m["role"] == "tool" for m in c.body["messages"]) for c in convo]
        assert loop["tool_results_sent"] == held == [0, 4, 7]
        # The entry URL came with the task; the made-up story's URL from nowhere. The first
        # turn's goto, with arguments that are not JSON, is not a goto at all.
        assert loop["goto"] == {"grounded": 1, "invented": 1}
    for run, _ in _runs(openai_batch, "right"):
        assert run["adapter"]["model_loop"]["goto"] == {"grounded": 0, "invented": 0}


def test_openai_tools_cuts_big_tool_results(openai_batch):
    _, _, model, _, _ = openai_batch
    for run, _ in _runs(openai_batch, "wrong"):
        second = _conversation(model, "wrong", run["entry_url"])[1].body["messages"]
        results = [m["content"] for m in second if m["role"] == "tool"]
        big = [r for r in results if "[truncated:" in r]
        assert big, "read_page and the snapshot exceed 600 bytes"
        assert all(len(r.split("\n...[truncated:")[0].encode()) <= 600 for r in big)


def test_the_key_goes_to_the_endpoint_and_nowhere_else(openai_batch):
    rows, _, model, refusing, store_dir = openai_batch
    auth = {r.headers.get("authorization") for r in model.completions + refusing.completions}
    assert auth == {f"Bearer {FAKE_KEY}"}
    assert FAKE_KEY not in json.dumps(rows, default=str)
    assert_no_key_in_files(Path(store_dir))
    # What the model saw never contained the key either.
    assert FAKE_KEY not in json.dumps([r.body for r in model.completions])


def test_endpoint_failures_end_the_run_with_a_clear_redacted_error(openai_batch):
    for run, score in _runs(openai_batch, "refused"):
        # The endpoint echoed the key in its error body: the row says [redacted:KEY_ENV].
        assert "refused the key from NEWSBENCH_TEST_MODEL_KEY: HTTP 401" in run["error"]
        assert f"[redacted:{KEY_ENV}]" in run["error"] and FAKE_KEY not in run["error"]
        assert run["answer"] is None and run["tokens"] == 0
        # A refused key is the provider's (or our configuration's) failure, not the agent's.
        assert run["env_failure"] == "model_unavailable" and score["excluded"]
    for run, score in _runs(openai_batch, "nowhere"):
        assert "failed after 2 attempt(s): unreachable" in run["error"], run["error"]
        assert run["run_status"] == "env_failure" and run["env_failure"] == "model_unavailable"
        assert score["excluded"] and score["failure_class"] == "model_unavailable"


def test_openai_tools_retries_a_flaky_endpoint(harbor, monkeypatch):
    """A 503, then a reply: the loop retries and goes on (the model calls no tool, so no
    browser is needed); the reply is prose, which ends the run as the agent's failure."""
    _, tasks, _ = harbor
    task = next(t for t in tasks if t["intent"] == "extract_article_metadata")
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    script = [HttpError(503, "overloaded"), reply("I cannot help with that.")]
    with OpenAIDouble(script) as model:
        agent = build_agent(_manifest("flaky", model.base_url, retry_backoff_s=0.01))
        tools = NoBrowserTools()
        with pytest.raises(ModelOutputFailure, match="prose instead of calling a tool") as e:
            asyncio.run(agent.run(AgentTask.from_task(task), tools))  # type: ignore[arg-type]
    assert e.value.kind == "prose_instead_of_action"
    assert [r.path for r in model.completions] == ["/v1/chat/completions"] * 2
    # The double's usage of the one reply, counted once (the 503 has none).
    (usage,) = model.usage_sent
    assert tools.tokens == usage["prompt_tokens"] + usage["completion_tokens"] > 20
    assert agent.run_outputs(tools)["model_loop"]["turns"] == 1


def test_a_missing_key_is_an_environment_problem_named_by_its_variable(monkeypatch, harbor):
    _, tasks, _ = harbor
    monkeypatch.delenv(KEY_ENV, raising=False)
    agent = build_agent(_manifest("nokey", "http://127.0.0.1:9/v1"))
    with pytest.raises(ModelEndpointError, match=KEY_ENV) as e:
        asyncio.run(agent.run(AgentTask.from_task(tasks[0]), NoBrowserTools()))  # type: ignore[arg-type]
    assert e.value.environmental


def test_example_manifests_are_valid_candidates():
    for name, adapter in (("openai-tools", "openai_tools"), ("browser-use", "browser_use")):
        m = load_manifest(REPO / "agents" / f"{name}-example.yaml")
        assert m.adapter == adapter and m.channel == "candidate" and m.model
        assert m.params["base_url"].startswith("http")
        agent = build_agent(m)  # builds without a key: the key is read when a run starts
        assert "api_key" not in json.dumps(agent.describe()).replace("api_key_env", "")
