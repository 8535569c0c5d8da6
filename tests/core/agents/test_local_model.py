"""A real language model through the harness: SmolLM2-135M-Instruct served by llama.cpp's
OpenAI-compatible server (llama-cpp-python), started by the harness for the batch, driving the
openai_tools loop and Browser Use in real Chromium on the newsroom. The model is weak and slow
on two cores: what is asserted is that every run ends scored or in an agent's class, with the
server's token counts, never as an environment failure, and that the server goes away after.

Needs the `local-model` extra. Without it these tests are skipped, except where
NEWSBENCH_REQUIRE_LOCAL_MODEL=1 (CI sets it): there a missing extra fails.
"""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import os
import socket
from pathlib import Path

import pytest

from newsbench_dagster.core.agents.chat_endpoint import ChatEndpoint, Endpoint
from newsbench_dagster.core.agents.local_model import LocalModel, default_threads
from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent, load_manifest
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.errors import ConfigError
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.scoring.failures import AGENT_FAILURES, SUCCESS
from newsbench_dagster.core.scoring.score import score_run
from newsbench_dagster.core.secrets import Redactor
from tests.support.local_model import require_local_model
from tests.support.paths import REPO

pytestmark = pytest.mark.heavy(90)

require_local_model()

TOOLS_MANIFEST = REPO / "agents" / "smollm2-tools.yaml"
BROWSER_USE_MANIFEST = REPO / "agents" / "smollm2-browser-use.yaml"


def _listening(base_url: str) -> bool:
    host, port = base_url.split("//")[1].split("/")[0].split(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def _with(manifest: AgentManifest, **params) -> AgentManifest:
    return manifest.model_copy(update={"params": {**manifest.params, **params}})


def _runner(agents, browser_options, robots, store: Path) -> Runner:
    # One run at a time: two servers on two cores would each slow the other's model.
    settings = RunSettings(screenshot=False, artifacts=("dom",), concurrency=1)
    return Runner(
        agents,
        options=browser_options,
        robots=robots,
        store=LocalArtifactStore(store),
        settings=settings,
    )


@pytest.fixture(scope="module")
def real_runs(harbor, browser_options, tmp_path_factory):
    """The lead task of harbor run once by each SmolLM2 manifest, in one batch."""
    day, tasks, robots = harbor
    task = copy.deepcopy(next(t for t in tasks if t["intent"] == "find_top_headline"))
    # A real model's pace on two busy cores (CI runs other tests beside it): the task's own
    # 60 s (30 s in these fixtures) would end a run before its first answer on a loaded machine.
    task["constraints"]["max_seconds"] = 180
    # And each call 120 s instead of the manifests' 30 / 60: with three test workers' browsers
    # on the same two cores, llama.cpp's threads crawl, and a call's wall-clock cap would
    # charge the machine's load to the model as a runaway (README "A local model": limits).
    agents = [
        build_agent(_with(load_manifest(p), timeout_s=120))
        for p in (TOOLS_MANIFEST, BROWSER_USE_MANIFEST)
    ]
    runner = _runner(agents, browser_options, robots, tmp_path_factory.mktemp("artifacts"))
    rows = run_tasks([task], day, runner)
    return {r["agent_name"]: (r, score_run(r, task)) for r in rows}


@pytest.mark.parametrize("agent", ["smollm2-tools", "smollm2-browser-use"])
def test_a_real_model_run_ends_scored_or_in_an_agent_class(real_runs, agent):
    row, score = real_runs[agent]
    assert row["env_failure"] is None, row["error"]
    assert score["failure_class"] in {SUCCESS, *AGENT_FAILURES}, score["failure_class"]
    assert not score["excluded"]
    settings = row["environment"]["agent_settings"]
    assert settings["local_model"] == "smollm2" and settings["n_ctx"] == 8192
    assert settings["model_file"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert settings["threads"] == default_threads() == max(1, (os.cpu_count() or 1) - 1)
    # The server the batch shared is gone once the batch is over.
    assert not _listening(settings["base_url"])


def test_the_tool_loop_counts_the_servers_tokens(real_runs):
    row, _ = real_runs["smollm2-tools"]
    loop = row["adapter"]["model_loop"]
    assert loop["turns"] >= 1 and row["tokens"] > 0, (row["run_status"], row["error"], loop)
    # Every call's completion within the cap, or the run ended as a runaway saying so.
    cap = row["environment"]["agent_settings"]["max_completion_tokens"]
    assert all(n <= cap for n in loop["completion_tokens"]) or loop["stopped"] == "runaway_output"
    assert len(loop["call_seconds"]) == loop["turns"]


def test_a_server_that_cannot_start_is_the_environments_failure_named(
    harbor, browser_options, tmp_path
):
    """A GGUF that is not one: the server exits, every run of that agent is excluded as
    model_unavailable with the server's own words; the other agent of the batch runs."""
    day, tasks, robots = harbor
    task = next(t for t in tasks if t["intent"] == "find_top_headline")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model" * 100)
    broken = build_agent(
        AgentManifest(
            name="broken-local",
            version="t",
            adapter="openai_tools",
            model="junk",
            params={"local_model": str(junk)},
        )
    )
    reference = build_agent(AgentManifest(name="reference", version="t", adapter="reference"))
    rows = run_tasks(
        [task], day, _runner([broken, reference], browser_options, robots, tmp_path / "a")
    )
    by = {r["agent_name"]: r for r in rows}
    assert by["broken-local"]["env_failure"] == "model_unavailable"
    assert "local model server for junk.gguf exited" in by["broken-local"]["error"]
    assert score_run(by["reference"], task)["success"]


def test_a_call_stopped_mid_way_or_mid_restart_leaves_the_next_call_a_serving_model():
    """A run's budget can run out in the middle of a model call, or of the restart after a
    runaway. The server then goes on generating for nobody, or is half started. The next call
    restarts it first and is served; before, it waited behind the abandoned generation, or
    found no server and ended as model_unavailable (an environment failure that was not)."""
    manifest = _with(load_manifest(TOOLS_MANIFEST), timeout_s=120)
    chat = ChatEndpoint(Endpoint.of(manifest, str(REPO)), retry_backoff_s=0.1)
    say = "Write a very long story about ships, harbours and their crews. "
    long = {"messages": [{"role": "user", "content": say * 300}], "max_tokens": 2000}
    short = {"messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 4}

    async def scenario() -> list[tuple[bool, int, int]]:
        async with chat.serve(), chat.client(chat.endpoint.key()) as client:
            server = chat.server

            async def stopped_then_next(payload: dict, until) -> list[tuple[bool, int, int]]:
                """A call stopped once `until()` returns, then the next call's outcome."""
                call = asyncio.ensure_future(chat.complete(client, payload, Redactor({})))
                await until()
                call.cancel()
                await asyncio.gather(call, return_exceptions=True)
                stopped = (server.stale, server.restarts, 0)
                reply = await chat.complete(client, short, Redactor({}))
                return [stopped, (server.stale, server.restarts, len(reply["choices"]))]

            async def restarting() -> None:
                while server.restarts < 2:
                    await asyncio.sleep(0.01)
                await asyncio.sleep(0.05)

            # 1. Stopped mid-call: the server is left working on the long prompt.
            seen = await stopped_then_next(long, lambda: asyncio.sleep(1.5))
            # 2. Stopped mid-restart: the old server killed, the new one not serving yet.
            server.stale = True
            return seen + await stopped_then_next(short, restarting)

    seen = asyncio.run(scenario())
    assert seen == [(True, 0, 0), (False, 1, 1), (True, 2, 0), (False, 3, 1)], seen


def test_the_servers_tool_calling_stops_at_the_requests_max_tokens_and_says_length():
    """llama-cpp-python's own tool calling generates arguments with max_tokens=None (68 tokens
    asked for 32 here, a runaway up to the context window); through llama_serve the request's
    cap holds and the reply says it was cut."""
    manifest = _with(load_manifest(TOOLS_MANIFEST), timeout_s=120)
    chat = ChatEndpoint(Endpoint.of(manifest, str(REPO)))
    write = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    essay = {
        "messages": [{"role": "user", "content": "Use the write tool to write a 3000-word essay "
                      "about ships and harbours."}],
        "tools": [{"type": "function", "function": {"name": "write", "parameters": write}}],
        "tool_choice": "auto",
        "temperature": 0,
        "max_tokens": 32,
    }  # fmt: skip

    async def ask() -> dict:
        async with chat.serve(), chat.client(chat.endpoint.key()) as client:
            return await chat.complete(client, essay, Redactor({}))

    body = asyncio.run(ask())
    (choice,) = body["choices"]
    assert choice["message"]["tool_calls"], choice  # it did call the tool...
    assert 0 < body["usage"]["completion_tokens"] <= 32, body["usage"]  # ...within the cap
    assert choice["finish_reason"] == "length"


def test_the_servers_threads_are_a_checked_manifest_param():
    def threads(**params):
        return LocalModel.of({"local_model": "smollm2", **params}, "agent t").threads

    assert threads(local_model_threads=1) == 1 and threads() == default_threads()
    for bad in (0, -1, True, "2", 1.5):
        with pytest.raises(ConfigError, match="agent t: params.local_model_threads"):
            threads(local_model_threads=bad)


def test_without_the_extra_the_manifest_is_refused_with_the_install_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name)
    )
    with pytest.raises(ConfigError, match=r"llama_cpp.*uv sync --extra local-model"):
        build_agent(load_manifest(TOOLS_MANIFEST))
