"""What real models do to a harness, each ending in its documented class with the run kept.

The outputs replayed here are SmolLM2-135M-Instruct's, served by llama-cpp-python 0.3.36 on this
machine (`agents try agents/smollm2-tools.yaml`): a runaway generation, arguments that are not
JSON, an answer in prose, a prompt over its context. The server is the scripted double
(tests/support/openai_double.py) answering with those outputs, in the strict mode that refuses
what llama-cpp-python's server refused (null content, json_schema) with its own messages, so the
first-contact failures of the issue are checked here too. Real Chromium, the real newsroom, the
real runner and scoring throughout. The same model for real: tests/core/agents/test_local_model.py.
"""

from __future__ import annotations

import json
import re

import pytest

from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.scoring.failures import AGENT_FAILURES
from newsbench_dagster.core.scoring.score import score_run
from tests.support.model_adapters import FAKE_KEY, KEY_ENV
from tests.support.openai_double import (
    HttpError,
    OpenAIDouble,
    calls,
    reply,
    text_of,
    tool_call,
)

# A real llama.cpp server and real runs: about 30 s on two busy cores.
pytestmark = pytest.mark.heavy(30)

# These runs test the adapters' failure classes, not the harness's pace: on two cores beside
# three other test files' browsers and a model, the entry page's observation once took longer
# than the default 10 s and a Browser Use run ended as oracle_unavailable (CI).
OBSERVE_S = 60

# SmolLM2's own outputs (see the module docstring).
RUNAWAY_ARGS = '{"url": "https://harbor-herald.test/' + "news/" * 400 + '"}'
MALFORMED_ARGS = (
    '{ "url": "https://harbor-herald.test/2018/07/5/LONDON_BORN_TOKYMADELEADER&amp;#34;}\n`'
)
PROSE = (
    'The top headline of the front page is "Awesome, Amazing, Awesome: A New Day in the Life '
    'of a Superhero"'
)
CONTEXT_400 = (
    "This model's maximum context length is 8192 tokens. However, you requested 19925 tokens "
    "(19925 in the messages, None in the completion). Please reduce the length of the messages "
    "or completion."
)

CONTEXT_400_LLAMA = (
    "request (715 tokens) exceeds the available context size (512 tokens), try increasing it"
)


def _lead_answer(request: dict) -> dict:
    """A model that reads the page, then answers its first teaser, then finishes."""
    results = [m for m in request["messages"] if m.get("role") == "tool"]
    if not results:
        return calls(tool_call("read_page"))
    if len(results) == 1:  # the first teaser, from what was sent (cut or not)
        listing = results[0]["content"].split('"listing"', 1)[1]
        teaser = listing[: listing.index("}")]
        lead = {k: re.search(rf'"{k}": "([^"]+)"', teaser).group(1) for k in ("headline", "url")}
        return calls(tool_call("answer", {"value": lead}))
    return calls(tool_call("finish"))


SCRIPTS = {
    # llama.cpp's server refuses null content: every assistant turn must carry a string.
    "null_content": _lead_answer,
    # 1,795 completion tokens for a cap of 256 (the server ignored max_tokens).
    "runaway_tokens": [
        calls(tool_call("goto", RUNAWAY_ARGS), usage={"completion_tokens": 1795}),
    ],
    # The same runaway from llama.cpp's server, which cuts it at the cap and says so: arguments
    # that never ended, finish_reason "length" and the cap's count of tokens (as OpenAI reports
    # a call cut at max_tokens).
    "cut_args": [
        calls(
            tool_call("goto", RUNAWAY_ARGS[:600]),
            usage={"completion_tokens": 256},
            finish_reason="length",
        ),
    ],
    # Cut long before the cap: the context was full. llama.cpp answered a 501-token prompt with
    # max_tokens 256 in a 512-token context so: HTTP 200, 11 tokens, finish_reason "length".
    "context_full": [
        calls(
            tool_call("goto", RUNAWAY_ARGS[:40]),
            usage={"prompt_tokens": 8120, "completion_tokens": 11},
            finish_reason="length",
        ),
    ],
    # Still generating when its 1 s cap fires (the server answers /v1/models meanwhile).
    "runaway_time": [calls(tool_call("read_page"), delay_s=3)],
    "malformed": [calls(tool_call("goto", MALFORMED_ARGS))] * 3,
    # Arguments nested 20,000 deep: json.loads overflowed the stack (a crash of the run).
    "nested": [calls(tool_call("goto", '{"a":' * 20_000 + "1" + "}" * 20_000))] * 3,
    "prose": [reply(PROSE)],
    "context_400": [HttpError(400, CONTEXT_400)],
    # llama.cpp's own words for a prompt longer than its context (measured: 715 tokens, 512).
    "context_400_llama": [HttpError(400, CONTEXT_400_LLAMA)],
    # Found by the benchmark: SmolLM2 navigating to a path, then to a URL Chromium refuses.
    "bad_urls": [
        calls(tool_call("goto", {"url": "/en-US/au"})),
        calls(tool_call("goto", {"url": "https://harbor-herald.test:99999/"})),
        calls(tool_call("goto", {"url": "chrome-error://chromewebdata/"})),
        reply(""),
    ],
    # A request the endpoint refused as malformed: ours, never the model's or the server's.
    "refused": [HttpError(400, "Unrecognized request argument supplied: tool_choice")],
}
PARAMS = {
    "runaway_time": {"timeout_s": 1, "retries": 0},
    "context_400": {"retries": 0},
    # The real read_page result does not fit: cut, recorded, the run goes on.
    "trimmed": {
        "context_tokens": 1200,
        "max_completion_tokens": 128,
        "tools": ["read_page", "answer", "finish"],
    },
    # Not even the task and the tools fit: the agent's overflow, before any call.
    "tiny_context": {"context_tokens": 700, "max_completion_tokens": 128},
}


def _counting_tokens(request: dict) -> dict:
    """_lead_answer, with the prompt tokens a tokenizer would count (4 characters each)."""
    sent = len(json.dumps(request["messages"])) + len(json.dumps(request.get("tools")))
    return {**_lead_answer(request), "usage": {"prompt_tokens": sent // 4}}


SCRIPTS["trimmed"] = _counting_tokens
SCRIPTS["tiny_context"] = _lead_answer


def _manifest(name: str, base_url: str) -> AgentManifest:
    return AgentManifest(
        name=name.replace("_", "-"),
        version="t",
        adapter="openai_tools",
        model=f"smollm2-{name}",
        params={
            "base_url": base_url,
            "api_key_env": KEY_ENV,
            "max_completion_tokens": 256,
            "retry_backoff_s": 0.05,
            **PARAMS.get(name, {}),
        },
    )


@pytest.fixture(scope="module")
def outcomes(harbor, browser_options, tmp_path_factory):
    """Each script's run on harbor's lead task, through the runner and scoring, with the
    requests its double received: {name: (row, score, double)}."""
    day, tasks, robots = harbor
    task = next(t for t in tasks if t["intent"] == "find_top_headline")
    doubles = {name: OpenAIDouble(script, strict=True).start() for name, script in SCRIPTS.items()}
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(KEY_ENV, FAKE_KEY)
            agents = {name: build_agent(_manifest(name, d.base_url)) for name, d in doubles.items()}
            runner = Runner(
                list(agents.values()),
                options=browser_options,
                robots=robots,
                store=LocalArtifactStore(tmp_path_factory.mktemp("artifacts")),
                settings=RunSettings(
                    screenshot=False, artifacts=("dom",), concurrency=4, observe_timeout_s=OBSERVE_S
                ),
            )
            rows = run_tasks([task], day, runner)
    finally:
        for d in doubles.values():
            d.stop()
    by_agent = {r["agent_name"]: r for r in rows}
    return {
        name: (row := by_agent[name.replace("_", "-")], score_run(row, task), doubles[name])
        for name in SCRIPTS
    }


@pytest.mark.parametrize(
    "name, failure",
    [
        ("runaway_tokens", "runaway_output"),
        ("cut_args", "runaway_output"),
        ("runaway_time", "runaway_output"),
        ("malformed", "malformed_tool_call"),
        ("nested", "malformed_tool_call"),
        ("prose", "prose_instead_of_action"),
        ("context_400", "context_overflow"),
        ("context_400_llama", "context_overflow"),
        ("tiny_context", "context_overflow"),
    ],
)
def test_each_real_model_failure_is_the_agents_own_class_and_the_run_is_kept(
    outcomes, name, failure
):
    row, score, _ = outcomes[name]
    assert score["failure_class"] == failure, (row["run_status"], row["error"])
    assert failure in AGENT_FAILURES and not score["excluded"] and not score["success"]
    assert row["env_failure"] is None
    # The run is kept whole: its trajectory, the harness's own look at the page, the reason.
    assert row["observation"]["final"] is not None and row["error"]
    assert row["adapter"]["model_loop"]["stopped"] == failure


def test_a_runaway_is_capped_and_its_tokens_are_the_servers_count(outcomes):
    row, _, double = outcomes["runaway_tokens"]
    assert "1795 completion tokens" in row["error"] and "cap of 256" in row["error"]
    (usage,) = double.usage_sent
    assert row["tokens"] == double.tokens_sent == usage["prompt_tokens"] + 1795
    assert double.completions[0].body["max_tokens"] == 256  # asked, and not trusted
    row, _, double = outcomes["cut_args"]
    assert "cut at its 256-token cap in a tool call's arguments" in row["error"]
    assert len(double.completions) == 1  # the cut call ends the run: no retry, no next turn
    row, _, double = outcomes["runaway_time"]
    assert "past its 1s cap" in row["error"] and len(double.completions) == 1  # not retried


def test_a_context_full_before_the_cap_is_the_harness_s_not_a_runaway(outcomes):
    """The prompt we built left the model 11 tokens of its 256: not the model's runaway."""
    row, score, double = outcomes["context_full"]
    assert row["env_failure"] == "harness_error" and score["excluded"], row["error"]
    assert "context filled up after 11 completion tokens of its 256-token cap" in row["error"]
    assert len(double.completions) == 1


def test_malformed_calls_are_told_to_the_model_until_the_limit(outcomes):
    row, _, double = outcomes["malformed"]
    assert len(double.completions) == 3  # max_invalid_calls
    told = [m for m in double.completions[-1].body["messages"] if m["role"] == "tool"]
    assert len(told) == 2 and all("not valid JSON" in m["content"] for m in told)
    invalid = [s for s in row["trajectory"] if s["tool"] == "invalid_tool_call"]
    assert len(invalid) == 3 and row["adapter"]["model_loop"]["invalid_tool_calls"] == 3


def test_urls_a_model_makes_up_are_its_own_doing_never_the_sites(outcomes):
    """A relative path is resolved against the page; a URL Chromium cannot navigate to is the
    agent's mistake (it was classed site_down, an environment failure, before)."""
    row, score, _ = outcomes["bad_urls"]
    gotos = [s for s in row["trajectory"] if s["tool"] == "goto"]
    assert gotos[0]["args"]["url"] == "/en-US/au" and gotos[0]["status"] == "ok"
    assert gotos[1]["status"] == "error" and "invalid URL" in gotos[1]["error"]
    assert gotos[2]["status"] == "error"  # Chromium's error page: no site was asked
    assert row["env_failure"] is None and score["failure_class"] == "premature_stop"


def test_prose_is_kept_for_the_reader(outcomes):
    row, _, _ = outcomes["prose"]
    assert row["adapter"]["model_loop"]["prose"] == PROSE
    assert row["answer"] is None  # prose is never taken as the answer


def test_the_context_budget_cuts_tool_results_records_it_and_the_run_goes_on(outcomes):
    row, score, double = outcomes["trimmed"]
    assert score["success"], score["checker"]  # the lead was still in what was kept
    context = row["adapter"]["model_loop"]["context"]
    assert context["trimmed_calls"] >= 1 and context["cut_chars"] > 0
    sent = [m["content"] for m in double.completions[1].body["messages"] if m["role"] == "tool"]
    assert "cut to fit the model's context" in sent[0]
    row, _, double = outcomes["tiny_context"]
    assert not double.completions  # refused before sending what could not fit
    assert "context" in row["error"]


def test_first_contact_a_strict_server_takes_every_request(outcomes):
    """llama.cpp's server refused the assistant turn with `content: null` (HTTP 500): every
    run was excluded as model_unavailable. Now the turn carries a string."""
    row, score, double = outcomes["null_content"]
    assert score["success"] and not score["excluded"], (row["error"], score["checker"])
    assert len(double.completions) == 3 and row["tokens"] == double.tokens_sent
    turns = [m for r in double.completions for m in r.body["messages"] if m["role"] == "assistant"]
    assert turns and all(isinstance(m["content"], str) for m in turns)


def test_a_request_the_server_refused_is_a_loud_harness_error(outcomes):
    row, score, _ = outcomes["refused"]
    assert row["env_failure"] == "harness_error" and score["excluded"]
    assert score["failure_class"] == "harness_error"
    assert re.search(r"refused the request Newsbench built.*HTTP 400", row["error"])


# -- Browser Use against llama.cpp's server ------------------------------------------------------
def _browser_use_in_prompt_mode(request: dict) -> dict:
    """Browser Use's model on a server without json_schema: the schema is in the system
    prompt, no response_format is asked; it reads the lead off the page state and is done."""
    assert "response_format" not in request, request.get("response_format")
    assert "<json_schema>" in request["messages"][0]["content"]
    page = text_of(request["messages"])
    lead = re.search(r"Harbor[^\n<]{10,120}", page)
    brain = {"evaluation_previous_goal": "ok", "memory": "", "next_goal": "report"}
    done = {"done": {"text": json.dumps({"headline": lead and lead.group(0)}), "success": True}}
    return reply(json.dumps({**brain, "action": [done]}), usage={"prompt_tokens": 900})


@pytest.fixture(scope="module")
def browser_use_runs(harbor, browser_options, tmp_path_factory):
    """Browser Use on a strict (llama.cpp-like) server: with json_schema (refused) and with
    the schema in the prompt. {structured_output: (row, score, double)}."""
    day, tasks, robots = harbor
    task = next(t for t in tasks if t["intent"] == "find_top_headline")
    # A reply cut at "length": short of its 256-token cap (the context was full, as
    # llama.cpp answers it: 200, 11 tokens) and at the cap (the model's runaway).
    cut = '{"evaluation_previous_goal": "ok", "memory": "'
    scripts = {
        "json_schema": [reply("never reached")],
        "prompt": _browser_use_in_prompt_mode,
        "context_full": [
            reply(
                cut, usage={"prompt_tokens": 8120, "completion_tokens": 11}, finish_reason="length"
            )
        ],
        "cut_at_cap": [
            reply(
                cut, usage={"prompt_tokens": 900, "completion_tokens": 256}, finish_reason="length"
            )
        ],
    }
    doubles = {k: OpenAIDouble(v, strict=True).start() for k, v in scripts.items()}
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(KEY_ENV, FAKE_KEY)
            agents = [
                build_agent(
                    AgentManifest(
                        name=f"bu-{mode.replace('_', '-')}",
                        version="t",
                        adapter="browser_use",
                        model="smollm2",
                        params={
                            "base_url": d.base_url,
                            "api_key_env": KEY_ENV,
                            "structured_output": mode if mode == "json_schema" else "prompt",
                            "retries": 0,
                            "max_failures": 1,
                            "max_completion_tokens": 256,
                        },
                    )
                )
                for mode, d in doubles.items()
            ]
            runner = Runner(
                agents,
                options=browser_options,
                robots=robots,
                store=LocalArtifactStore(tmp_path_factory.mktemp("artifacts")),
                settings=RunSettings(
                    screenshot=False, artifacts=(), concurrency=4, observe_timeout_s=OBSERVE_S
                ),
            )
            rows = run_tasks([task], day, runner)
    finally:
        for d in doubles.values():
            d.stop()
    by_mode = {r["agent_name"].removeprefix("bu-").replace("-", "_"): r for r in rows}
    return {m: (r, score_run(r, task), doubles[m]) for m, r in by_mode.items()}


def test_browser_use_asking_json_schema_of_llama_cpp_is_a_loud_harness_error(browser_use_runs):
    """First contact: Browser Use asked for json_schema, llama.cpp's server refused it (HTTP
    500, a validation error of our request), and the run was excluded as model_unavailable."""
    row, score, double = browser_use_runs["json_schema"]
    assert double.completions[0].body["response_format"]["type"] == "json_schema"
    assert row["env_failure"] == "harness_error" and score["failure_class"] == "harness_error"
    assert "refused the request Newsbench built" in row["error"]
    assert "json_object" in row["error"]  # the server's own words reach the reader


def test_browser_use_with_the_schema_in_the_prompt_works_on_llama_cpp(browser_use_runs):
    row, score, double = browser_use_runs["prompt"]
    assert not double.errors, double.errors  # every request passed the script's asserts
    assert row["env_failure"] is None and row["run_status"] == "answered", row["error"]
    assert row["answer"] and row["tokens"] > 0
    assert row["environment"]["agent_settings"]["structured_output"] == "prompt"


def test_browser_use_cut_short_of_its_cap_by_a_full_context_is_the_harness_s(browser_use_runs):
    """The same "length" reply: 11 tokens of 256 (the context filled up: the prompt left the
    model no room) is the harness's; 256 of 256 is the model's runaway."""
    row, score, double = browser_use_runs["context_full"]
    assert row["env_failure"] == "harness_error" and score["excluded"], row["error"]
    assert "context filled up after 11 completion tokens of its 256-token cap" in row["error"]
    assert len(double.completions) == 1  # the cut call ends the run
    row, score, double = browser_use_runs["cut_at_cap"]
    assert row["env_failure"] is None and score["failure_class"] == "runaway_output"
    assert "cut at its cap" in row["error"] and len(double.completions) == 1
