"""Issue #21, defect 4, the model side: an endpoint that echoes the API key back (in a tool
call's arguments: a URL to open, the answer) gets it into nothing the run leaves: not the
trajectory, not the spans, not the row, not an artifact (trace.zip's members included). Real
Chromium and newsroom; the endpoint is the OpenAI-compatible test double."""

from __future__ import annotations

import json

import pytest

from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent
from newsbench_dagster.core.artifacts import LocalArtifactStore, local_path
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from tests.core.harness.test_telemetry import Collector
from tests.support.model_adapters import FAKE_KEY, KEY_ENV
from tests.support.openai_double import OpenAIDouble, calls, tool_call
from tests.support.secret_scan import found, leaks_in_tree


def echoing_model(entry_url: str):
    """A model that has the key (as a leaky gateway or a prompt-injected model could) and
    puts it wherever its tool calls reach: a URL it opens, its answer."""

    def script(request: dict) -> dict:
        turn = sum(m.get("role") == "assistant" for m in request["messages"])
        if turn == 0:
            return calls(
                tool_call("goto", {"url": f"{entry_url}?key={FAKE_KEY}"}),
                content=f"Opening the page with my key {FAKE_KEY}",
            )
        if turn == 1:
            value = {"headline": f"key {FAKE_KEY}", "url": f"{entry_url}?key={FAKE_KEY}"}
            return calls(tool_call("answer", {"value": value, "claims_success": True}))
        return calls(tool_call("finish"))

    return script


@pytest.mark.parametrize("spans_to", ["file", "otlp"])
def test_a_key_the_endpoint_echoes_reaches_no_trajectory_span_row_or_artifact(
    spans_to, harbor, browser_options, tmp_path, monkeypatch
):
    day, tasks, robots = harbor
    task = next(t for t in tasks if t["intent"] == "find_top_headline")
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with OpenAIDouble(echoing_model(task["entry_url"])) as model, Collector() as collector:
        manifest = AgentManifest(
            name="echo",
            version="t",
            adapter="openai_tools",
            model="double-echo",
            params={"base_url": model.base_url, "api_key_env": KEY_ENV},
        )
        settings = RunSettings(
            concurrency=1,
            screenshot=False,
            artifacts=("har", "console", "a11y", "trace", "spans"),
            otlp_endpoint=collector.endpoint if spans_to == "otlp" else None,
        )
        runner = Runner(
            [build_agent(manifest)],
            options=browser_options,
            robots=robots,
            store=LocalArtifactStore(tmp_path),
            settings=settings,
        )
        (row,) = run_tasks([task], day, runner)
    # The key went through the run: the model's calls carried it and the adapter ran them.
    assert found(json.dumps(model.requests[-1].body), FAKE_KEY)
    steps = [s["tool"] for s in row["trajectory"]]
    assert steps[:2] == ["goto", "answer"], steps
    mark = f"[redacted:{KEY_ENV}]"
    assert mark in json.dumps(row["trajectory"]) and mark in json.dumps(row["answer"])
    assert not found(json.dumps(row, default=str), FAKE_KEY)
    if spans_to == "file":
        spans = local_path(row["artifacts"]["spans"]).read_bytes()
    else:  # the protobuf the collector received holds its strings as UTF-8
        assert row["environment"]["telemetry"]["exported"] == "otlp"
        spans = b"".join(body for _, _, body in collector.requests)
    assert mark.encode() in spans and not found(spans, FAKE_KEY)
    assert not leaks_in_tree(tmp_path, FAKE_KEY)
