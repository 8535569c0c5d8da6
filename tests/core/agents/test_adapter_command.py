"""The `command` adapter in real Chromium against the newsroom: a real command-line agent
(examples/cdp_agent.py) attached over CDP, scored from the page; time limits that kill the
whole process; output kept with secrets redacted; arguments that never meet a shell."""

from __future__ import annotations

import asyncio
import copy
import json
import os
from pathlib import Path

import pytest

from newsbench_dagster.core.agents.adapters.command import (
    CommandAgentError,
    last_json_line,
    parse_answers,
    substitute,
)
from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent, load_manifest
from newsbench_dagster.core.agents.stream_capture import StreamCapture
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.errors import ConfigError
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.scoring.failures import kind_of
from newsbench_dagster.core.scoring.score import score_run
from newsbench_dagster.core.secrets import Redactor
from newsbench_dagster.paths import AGENTS_DIR, PROJECT_ROOT

EXAMPLE = str(PROJECT_ROOT / "examples" / "cdp_agent.py")
EXAMPLE_ARGS = ["--cdp-url", "{cdp_url}", "--answer-file", "{answer_file}"]
EXAMPLE_ARGS += ["--prompt", "{prompt}", "--url", "{url}"]
SECRET = "s3cr3t-" + os.urandom(6).hex()
MARK = "[redacted:NB_TEST_AGENT_SECRET]"
CRASH = "import os, sys; sys.stderr.write('model fell over, key ' + os.environ['KEY']); exit(3)"
INJECTION = "Lead? ; rm -rf ./victim $(touch pwned1) `touch pwned2` && echo $HOME"


def command_agent(name: str, command: list[str], **params) -> object:
    manifest = AgentManifest(
        name=name, version="1", adapter="command", params={"command": command, **params}
    )
    return build_agent(manifest)


def run(agents, tasks, day, options, robots, store):
    # Each CDP run has a Chromium of its own, so runs can overlap.
    settings = RunSettings(concurrency=4, screenshot=False, artifacts=())
    runner = Runner(agents, options=options, robots=robots, store=store, settings=settings)
    return run_tasks(tasks, day, runner)


def kept(row: dict, name: str) -> str:
    return Path(row["artifacts"][name].removeprefix("file://")).read_text(encoding="utf-8")


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(scope="module", autouse=True)
def secret_in_environment():
    """A secret in the harness's environment, as a deployment would provide an API key."""
    os.environ["NB_TEST_AGENT_SECRET"] = SECRET
    yield
    del os.environ["NB_TEST_AGENT_SECRET"]


@pytest.fixture(scope="module")
def harbor(harbor_today):
    day, tasks, robots = harbor_today
    by_intent = {t["intent"]: copy.deepcopy(t) for t in tasks}
    return day, by_intent["find_top_headline"], by_intent["extract_article_metadata"], robots


@pytest.fixture(scope="module")
def good_runs(harbor, browser_options, tmp_path_factory):
    """The example agent on a front page and an article, with a secret in its environment."""
    day, top, article, robots = harbor
    agent = command_agent(
        "cdp-example",
        ["{python}", EXAMPLE, *EXAMPLE_ARGS],
        env={"EXAMPLE_AGENT_TOKEN": "${NB_TEST_AGENT_SECRET}"},
        timeout_s=30,
    )
    store = LocalArtifactStore(tmp_path_factory.mktemp("good"))
    rows = run([agent], [top, article], day, browser_options, robots, store)
    tasks = {t["id"]: t for t in (top, article)}
    return {r["intent"]: (r, score_run(r, tasks[r["task_id"]])) for r in rows}


@pytest.fixture(scope="module")
def bad_runs(harbor, browser_options, tmp_path_factory):
    """Agents that answer wrong, hang, crash, or are not there, on the front-page task."""
    day, top, _, robots = harbor
    top = copy.deepcopy(top)
    top["inputs"]["prompt"] = INJECTION
    top["constraints"]["max_seconds"] = 8
    work = tmp_path_factory.mktemp("cwd")
    (work / "victim").mkdir()
    wrong = json.dumps({"headline": "Moon declared a cheese", "url": "http://harbor-herald.test/"})
    py = ["{python}", "-c"]
    agents = [
        command_agent("wrong", [*py, f"print('thinking...'); print({wrong!r})"]),
        command_agent(
            "slow", [*py, "import time; print('started', flush=True); time.sleep(60)"], timeout_s=3
        ),
        command_agent("stuck", ["{python}", EXAMPLE, *EXAMPLE_ARGS, "--sleep", "60"]),
        command_agent("missing", ["/nonexistent/bin/browser-agent", "{url}"]),
        command_agent(
            "garbled",
            [*py, "import sys; open(sys.argv[1], 'w').write('{headline: oops')", "{answer_file}"],
        ),
        command_agent("crash", [*py, CRASH], env={"KEY": "${NB_TEST_AGENT_SECRET}"}),
        # Hostile output: an answer nested 20,000 deep (json.loads overflows the stack on it).
        command_agent("nested", [*py, "print('{\"a\":' * 20_000 + '1' + '}' * 20_000)"]),
        command_agent(
            "echo",
            [*py, "import json, sys; print(json.dumps({'argv': sys.argv[1:]}))", "{prompt}"],
            cwd=str(work),
        ),
    ]
    store = LocalArtifactStore(tmp_path_factory.mktemp("bad"))
    rows = run(agents, [top], day, browser_options, robots, store)
    return {r["agent_name"]: (r, score_run(r, top)) for r in rows}, work


def test_example_agent_succeeds_and_is_scored_from_the_page(good_runs):
    run_row, score = good_runs["find_top_headline"]
    assert run_row["run_status"] == "answered", run_row["error"]
    assert score["success"], score["checker"]
    assert run_row["observation"]["final"] is not None  # the harness still saw the page
    step = run_row["trajectory"][0]
    assert step["tool"] == "command" and step["exit_code"] == 0
    assert "answered find_top_headline" in kept(run_row, "command_stdout.txt")


def test_example_agent_reads_article_metadata(good_runs):
    run_row, score = good_runs["extract_article_metadata"]
    assert run_row["run_status"] == "answered", run_row["error"]
    assert set(run_row["answer"]) == {"headline", "authors", "published", "modified"}
    assert score["failure_class"] in ("success", "perception"), score["checker"]


def test_secrets_from_the_environment_are_redacted_from_kept_output(good_runs):
    for run_row, _ in good_runs.values():
        stdout = kept(run_row, "command_stdout.txt")
        # The agent did get the secret, and printed it.
        assert f"using token {MARK}" in stdout
        saved = Path(run_row["artifacts"]["run"].removeprefix("file://")).read_text()
        record = json.dumps(run_row["adapter"]["command"])
        for text in (stdout, kept(run_row, "command_stderr.txt"), record):
            assert SECRET not in text
        assert SECRET not in saved


def test_a_wrong_answer_on_stdout_fails(bad_runs):
    run_row, score = bad_runs[0]["wrong"]
    assert run_row["run_status"] == "answered" and run_row["answer"]["headline"].startswith("Moon")
    assert run_row["adapter"]["command"]["answer_source"] == "stdout"
    assert score["success"] is False and score["failure_class"] == "wrong_target"


@pytest.mark.parametrize(
    ("agent", "status", "said"),
    [("slow", "budget_exceeded", "started"), ("stuck", "timeout", "task: ")],
)
def test_a_hanging_agent_is_killed_and_fails_for_time(bad_runs, agent, status, said):
    """`slow` outlives its own timeout_s, `stuck` the task's time budget (the runner cancels
    it): either way the process is killed, reaped, and what it printed is kept."""
    run_row, score = bad_runs[0][agent]
    assert run_row["run_status"] == status, run_row["error"]
    record = run_row["adapter"]["command"]
    assert record["killed"] is True and record["exit_code"] == -9
    assert gone(record["pid"])  # no orphan left running
    assert said in kept(run_row, "command_stdout.txt")
    assert score["failure_class"] == "budget_exceeded" and score["excluded"] is False
    assert (run_row["ended_at"] - run_row["started_at"]).total_seconds() < 20


def test_a_missing_executable_is_a_clear_agent_error(bad_runs):
    run_row, score = bad_runs[0]["missing"]
    assert run_row["run_status"] == "agent_error"
    assert "/nonexistent/bin/browser-agent" in run_row["error"] and "not found" in run_row["error"]
    assert score["failure_class"] == "planning"


def test_a_malformed_answer_is_the_agents_error_naming_the_text(bad_runs):
    run_row, _ = bad_runs[0]["garbled"]
    assert run_row["run_status"] == "agent_error"
    assert "not valid JSON" in run_row["error"] and "{headline: oops" in run_row["error"]


def test_an_answer_nested_past_the_limit_is_the_agents_error_not_a_crash(bad_runs):
    """A RecursionError in the harness was a crash of the run; it is the agent's output."""
    run_row, score = bad_runs[0]["nested"]
    # Its one line is not an answer: nothing usable on stdout, the agent's failure.
    assert run_row["run_status"] == "no_answer", run_row["error"]
    assert run_row["env_failure"] is None and score["excluded"] is False
    assert kind_of(score["failure_class"]) == "agent", score["failure_class"]
    with pytest.raises(CommandAgentError, match="nested deeper than 64 levels"):
        parse_answers('{"a":' * 20_000 + "1" + "}" * 20_000, "answer.json")


def test_a_non_zero_exit_is_recorded_with_what_it_said(bad_runs):
    run_row, _ = bad_runs[0]["crash"]
    assert run_row["run_status"] == "agent_error"
    assert "code 3" in run_row["error"] and f"model fell over, key {MARK}" in run_row["error"]
    assert f"model fell over, key {MARK}" in kept(run_row, "command_stderr.txt")
    assert SECRET not in run_row["error"]


def test_placeholders_are_substituted_without_a_shell(bad_runs):
    runs, work = bad_runs
    run_row, _ = runs["echo"]
    assert run_row["answer"] == {"argv": [INJECTION]}  # one argument, verbatim
    assert (work / "victim").is_dir()
    assert not (work / "pwned1").exists() and not (work / "pwned2").exists()


def test_manifest_errors_are_caught_when_the_agent_is_built():
    with pytest.raises(ConfigError, match="list of arguments, not a string"):
        command_agent("shell", "agent --task {prompt}")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"\{tsk\}.*\{wat\}"):
        command_agent("typo", ["agent", "{tsk}", "--x={wat}", "{prompt}"])
    # Only {identifier} is a placeholder: JSON and attribute syntax stay literal.
    values = {"url": "u", "prompt": "p"}
    assert substitute('{{url}} {url} {"a": 1} {prompt.__class__}', values) == (
        '{url} u {"a": 1} {prompt.__class__}'
    )


def test_answers_are_parsed_strictly():
    answers = parse_answers('[{"a": 1}, {"a": 2, "claims_success": false}]', "f")
    assert answers == [({"a": 1}, True), ({"a": 2}, False)]
    with pytest.raises(Exception, match=r"item 1 of f is not a JSON object: '\"x\"'"):
        parse_answers('[{"a": 1}, "x"]', "f")
    assert last_json_line('log\n{"a": 1}\n{"b": [2]}\ndone\n') == '{"b": [2]}'


def test_the_example_manifest_loads():
    agent = build_agent(load_manifest(AGENTS_DIR / "command-example.yaml"))
    assert agent.manifest.channel == "candidate" and agent.needs_cdp


def test_browser_close_over_cdp_is_swallowed(harbor, browser_options, tmp_path):
    day, top, _, robots = harbor
    agent = command_agent("closer", ["{python}", EXAMPLE, *EXAMPLE_ARGS, "--close-browser"])
    rows = run([agent], [top], day, browser_options, robots, LocalArtifactStore(tmp_path))
    (row,) = rows
    assert row["run_status"] == "answered", row["error"]
    assert row["observation"]["final"] is not None
    assert score_run(row, top)["success"]


def test_output_keeps_its_head_and_tail_within_the_cap_and_redacted():
    async def capture() -> bytes:
        reader = asyncio.StreamReader()
        reader.feed_data(b"".join(f"line {i} key={SECRET}\n".encode() for i in range(5000)))
        reader.feed_eof()
        cap = StreamCapture(cap=4000)
        await cap.read(reader)
        assert cap.ending().endswith(f"line 4999 key={SECRET}\n")  # where an answer is read
        return cap.text(Redactor({"NB_TEST_AGENT_SECRET": SECRET}))

    kept = asyncio.run(capture())
    grown = (len(MARK) - len(SECRET)) * kept.count(MARK.encode())  # the marker is longer
    assert len(kept) - grown <= 4100 and b"bytes not kept" in kept
    assert kept.startswith(f"line 0 key={MARK}".encode()) and kept.endswith(
        f"line 4999 key={MARK}\n".encode()
    )
    assert SECRET.encode() not in kept and SECRET[:8].encode() not in kept  # no half secret
