"""A real language model through the harness: SmolLM2-135M-Instruct served by llama.cpp's own
OpenAI-compatible server (the xllamacpp wheel), started by the harness for the batch, driving the
openai_tools loop and Browser Use in real Chromium on the newsroom. The prompt that server renders
is checked here too: what the model reads is what the harness sent, verbatim. The model is weak
and slow on two cores: what is asserted is that every run ends scored or in an agent's class,
with the server's token counts, never as an environment failure, and that the server goes away
after.

Needs the `local-model` extra. Without it these tests are skipped, except where
NEWSBENCH_REQUIRE_LOCAL_MODEL=1 (CI sets it): there a missing extra fails.
"""

from __future__ import annotations

import asyncio
import copy
import html
import importlib.util
import json
import os
import re
import socket
from pathlib import Path

import httpx
import lxml.html
import pytest

from newsbench_dagster.core.agents.chat_endpoint import ChatEndpoint, Endpoint
from newsbench_dagster.core.agents.local_model import (
    LocalModel,
    LocalModelServer,
    default_threads,
)
from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent, load_manifest
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.errors import ConfigError, ModelEndpointError
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
    # One step shows a real model's run through the harness to its score; each Browser Use
    # step reads a ~3k-token prompt and writes up to 256 tokens (50 s of one core here), and
    # its default 15 steps spent the whole 180 s.
    task["constraints"]["max_steps"] = 1
    # And each call 120 s instead of the manifests' 30 / 60: with three test workers' browsers
    # on the same two cores, llama.cpp's threads crawl, and a call's wall-clock cap would
    # charge the machine's load to the model as a runaway (README "A local model": limits).
    # Each prompt token costs ~8 ms of a core here: Browser Use reads a page of 1,000
    # characters, not 4,000, beside its own instructions.
    agents = [
        build_agent(_with(load_manifest(TOOLS_MANIFEST), timeout_s=120, max_completion_tokens=64)),
        build_agent(
            _with(
                load_manifest(BROWSER_USE_MANIFEST),
                timeout_s=120,
                max_completion_tokens=64,
                max_page_chars=1000,
            )
        ),
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


def test_the_server_stops_at_the_requests_max_tokens_with_tools_offered_and_says_length():
    """llama-cpp-python's own tool calling generated with max_tokens=None (a runaway up to the
    context window, which a patch of ours had to cut); llama.cpp's server holds the request's
    cap for everything it generates and says it cut."""
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
    assert body["usage"]["completion_tokens"] == 32, body["usage"]
    assert choice["finish_reason"] == "length"


def test_a_prompt_that_leaves_less_room_than_max_tokens_is_cut_short_of_the_cap():
    """What the doubles' "context full" replies stand for (test_model_agent_failures): a prompt
    that fits the context but leaves less room than max_tokens is answered 200 with fewer
    completion tokens than asked and finish_reason "length", the same words as a reply cut at
    its cap; only the count tells the two apart."""
    manifest = _with(load_manifest(TOOLS_MANIFEST), timeout_s=120, local_model_ctx=512)
    chat = ChatEndpoint(Endpoint.of(manifest, str(REPO)))
    say = "Write a very long story about ships, harbours and their crews. "
    # The model must not end the story on its own before the context is full: at the server's
    # default sampling it sometimes did, after 21 tokens of the 40 left (finish_reason "stop",
    # a failure of this test by chance). Greedy, and the end-of-text token ignored, so the
    # only end is the full context.
    story = {
        "messages": [{"role": "user", "content": say * 33}],
        "max_tokens": 256,
        "temperature": 0,
        "ignore_eos": True,
    }

    async def ask() -> dict:
        async with chat.serve(), chat.client(chat.endpoint.key()) as client:
            return await chat.complete(client, story, Redactor({}))

    body = asyncio.run(ask())
    (choice,) = body["choices"]
    usage = body["usage"]
    assert choice["finish_reason"] == "length", (choice, usage)
    assert 0 < usage["completion_tokens"] < 256, usage
    assert usage["prompt_tokens"] + usage["completion_tokens"] == 512, usage


# What the harness sends back after a tool call: a page's text as the tool result, with the
# characters an HTML-escaping template mangled and the ones a byte-level one might.
PAGE_TEXT = 'Harbor "Herald" & <Tides>: café, Ørsted, 東京, naïve: a=1&b=2'
CALL_ARGS = '{"url": "http://harbor.test/story?id=7&ref=home"}'
CONVERSATION = [
    {"role": "system", "content": "You are a browsing agent."},
    {"role": "user", "content": "Open http://harbor.test/ and report the lead headline."},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "goto", "arguments": CALL_ARGS}},
    ]},
    {"role": "tool", "tool_call_id": "call_1", "content": PAGE_TEXT},
]  # fmt: skip
GOTO = {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}
TOOLS = [{"type": "function", "function": {"name": "goto", "description": "Open a URL.",
          "parameters": GOTO}}]  # fmt: skip


def _rendered_prompt(template: str) -> str:
    """The prompt the real server builds for CONVERSATION (its /apply-template endpoint)."""
    manifest = _with(load_manifest(TOOLS_MANIFEST), local_model_chat_template=template)
    chat = ChatEndpoint(Endpoint.of(manifest, str(REPO)))

    async def render() -> str:
        async with chat.serve():
            root = chat.server.base_url.removesuffix("/v1")
            async with httpx.AsyncClient(timeout=30) as client:
                body = {"messages": CONVERSATION, "tools": TOOLS}
                reply = await client.post(f"{root}/apply-template", json=body)
                reply.raise_for_status()
                return reply.json()["prompt"]

    return asyncio.run(render())


def _what_the_model_misses(prompt: str) -> list[str]:
    wanted = {
        "the tool result, verbatim": f'<tool_response name="goto">\n{PAGE_TEXT}\n',
        "the tool call, verbatim": CALL_ARGS,
        "the offered tool": '"name": "goto", "description": "Open a URL."',
        "the system prompt": "You are a browsing agent.",
    }
    missing = [what for what, text in wanted.items() if text not in prompt]
    escaped = [e for e in ("&#34;", "&quot;", "&amp;", "&lt;", "&gt;", "\\u") if e in prompt]
    return missing + [f"escaped: {e}" for e in escaped]


def test_the_served_prompt_carries_every_tool_result_and_call_verbatim():
    """Rendered by the real llama.cpp server the harness starts: before, llama-cpp-python's
    chatml-function-calling rendered each tool result as an empty turn and HTML-escaped every
    message, so the model never read a page."""
    prompt = _rendered_prompt("chatml-tools")
    assert _what_the_model_misses(prompt) == [], prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_the_verbatim_check_rejects_an_escaped_or_emptied_prompt():
    """The check above fails a prompt rendered as llama-cpp-python's chatml-function-calling
    rendered it: every message HTML-escaped, the tool result an empty turn."""
    good = _rendered_prompt("chatml-tools")
    escaped = good.replace(PAGE_TEXT, html.escape(PAGE_TEXT)).replace(
        CALL_ARGS, html.escape(CALL_ARGS)
    )
    assert "escaped: &amp;" in _what_the_model_misses(escaped)
    assert "the tool result, verbatim" in _what_the_model_misses(good.replace(PAGE_TEXT, ""))


def _escaping_template(tmp_path: Path) -> Path:
    """Our template with the one fault llama-cpp-python's had for every message: the tool
    result HTML-escaped."""
    ours = (REPO / "newsbench_dagster/core/agents/chatml_tools.jinja").read_text()
    verbatim = "\n{{ message.content }}\n</tool_response>"
    escaped = (
        "\n{{ message.content | replace('&', '&amp;') | replace('<', '&lt;') }}\n</tool_response>"
    )
    assert verbatim in ours
    path = tmp_path / "escaping.jinja"
    path.write_text(ours.replace(verbatim, escaped))
    return path


@pytest.mark.parametrize(
    ("template", "lost"),
    [("gguf", "the offered tools, the assistant's tool call"), ("escaping", "tool results")],
)
def test_a_template_that_loses_part_of_the_conversation_is_refused_at_start(
    tmp_path, template, lost
):
    """The start-up self-check: the server renders a canary conversation, and a template that
    drops (SmolLM2's own) or escapes (llama-cpp-python's way) part of it is the environment's
    fault, named, before any run could charge a blind model's failures to the agent."""
    spec = template if template == "gguf" else str(_escaping_template(tmp_path))
    model = LocalModel.of({"local_model": "smollm2", "local_model_chat_template": spec}, "t")

    async def start() -> None:
        async with LocalModelServer(model):
            pass

    with pytest.raises(ModelEndpointError) as refused:
        asyncio.run(start())
    assert refused.value.fault == "environment"
    assert f"loses {lost} (dropped or escaped)" in str(refused.value)
    # And our own template passes the same check (the servers above all started and served).
    asyncio.run(_serves(LocalModel.of({"local_model": "smollm2"}, "t")))


async def _serves(model: LocalModel) -> None:
    async with LocalModelServer(model) as server:
        assert server.started_s is not None


def test_the_doubles_prompt_token_count_holds_to_the_real_servers(newsroom_server, registry):
    """The contract of tests/support/openai_double.py's default usage: for the loop's own
    prompts (its system prompt and tools, then a real newsroom page's text, then its links as
    tool results) the double counts within 15 % of what llama.cpp's server counts with
    SmolLM2's tokenizer. A double that said 100 for every prompt (as it did) fails here."""
    from newsbench_dagster.core.agents.adapters.openai_tools import (
        DEFAULT_SYSTEM_PROMPT,
        chat_tools,
    )
    from tests.support.openai_double import prompt_tokens_of

    origin = registry.get("harbor").home.rstrip("/")
    with httpx.Client(proxy=newsroom_server.address, timeout=10) as client:
        home = client.get(f"{origin}/").text
    text = lxml.html.fromstring(home).text_content()
    links = re.findall(r'href="([^"]+)"[^>]*>([^<]{3,})<', home)
    opened = [
        {"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": f"Find the top headline of {origin}/ and answer it."},
    ]

    def after(tool: str, result: dict) -> list[dict]:
        call = {"id": "c1", "type": "function", "function": {"name": tool, "arguments": "{}"}}
        return [
            *opened,
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": json.dumps(result)},
        ]

    page = {"url": origin, "text": text[:6000]}
    listed = {"links": [{"href": h, "text": x} for h, x in links[:60]]}
    conversations = [opened, after("read_page", page), after("links", listed)]
    bodies = [{"messages": m, "tools": chat_tools()} for m in conversations]
    chat = ChatEndpoint(Endpoint.of(load_manifest(TOOLS_MANIFEST), str(REPO)))

    async def counted() -> tuple[list[int], int, int]:
        # The server's own count without running the model over 3k tokens (48 s each on one
        # thread, past a CI machine's read timeout): its template, then its tokenizer.
        async with chat.serve(), httpx.AsyncClient(timeout=60) as client:
            root = chat.server.base_url.removesuffix("/v1")

            async def tokens(body: dict) -> int:
                prompt = (await client.post(f"{root}/apply-template", json=body)).json()["prompt"]
                ask = {"content": prompt, "add_special": True}
                return len((await client.post(f"{root}/tokenize", json=ask)).json()["tokens"])

            # That count is the one usage reports, held on a prompt short enough to run.
            short = {"messages": opened[1:], "max_tokens": 1, "temperature": 0}
            reply = await client.post(f"{chat.server.base_url}/chat/completions", json=short)
            return [await tokens(b) for b in bodies], await tokens(short), _usage(reply)

    real, short_counted, short_used = asyncio.run(counted())
    assert short_counted == short_used > 10
    ours = [prompt_tokens_of(b) for b in bodies]
    assert all(abs(o - r) <= 0.15 * r for o, r in zip(ours, real, strict=True)), (ours, real)
    assert real[1] > real[0] + 500  # the page's text is in the count


def _usage(reply: httpx.Response) -> int:
    return reply.json()["usage"]["prompt_tokens"]


def test_the_chat_template_is_a_checked_manifest_param(tmp_path):
    def model(**params):
        return LocalModel.of({"local_model": "smollm2", **params}, "agent t", tmp_path)

    assert model().template_path.name == "chatml_tools.jinja"
    assert model(local_model_chat_template="gguf").template_path is None
    (tmp_path / "mine.jinja").write_text("{{ messages[0].content }}")
    assert model(local_model_chat_template="mine.jinja").template_path == tmp_path / "mine.jinja"
    with pytest.raises(ConfigError, match="agent t: params.local_model_chat_template 'x.j'"):
        model(local_model_chat_template="x.j")
    with pytest.raises(ConfigError, match="local_model_chat_format was llama-cpp-python's"):
        model(local_model_chat_format="chatml-function-calling")


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
        importlib.util, "find_spec", lambda name, *a: None if name == "xllamacpp" else real(name)
    )
    with pytest.raises(ConfigError, match=r"xllamacpp.*uv sync --extra local-model"):
        build_agent(load_manifest(TOOLS_MANIFEST))
