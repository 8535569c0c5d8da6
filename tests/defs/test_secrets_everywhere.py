"""Issue #21, defect 4: a secret given to an agent reaches no sink. A real Dagster
materialization (feeds, tasks, runs, scores) against the newsroom, real Chromium, a real
DuckDB file; the agent (tests/support/leaky_agent.py) echoes its `${NEWSBENCH_TEST_SECRET}`
everywhere it can: stdout and stderr, a URL's query (as is, base64, URL-encoded), the browser
console, the page's title, an ARIA label, a heading, a typed field, its answer. Then every
sink is scanned for the secret in any encoding: every column of every warehouse table, every
file of the run's artifact folder (trace.zip's members one by one), Dagster's event log and
what the process printed. A second agent in the same batch is the positive control: the same
script given a value of the same shape as a literal (not a secret), whose value the same scan
finds in each of those sinks."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sys
import zipfile
from pathlib import Path

import duckdb
import pytest
import yaml
from dagster import MultiPartitionKey, instance_for_test, materialize

from newsbench_dagster.definitions import ASSETS
from newsbench_dagster.resources import AgentRegistryResource, TaskSetResource
from tests.support.newsroom_clock import frozen_now
from tests.support.paths import REPO
from tests.support.pipeline_resources import local_resources
from tests.support.secret_scan import found, leaks_in_tree

pytestmark = pytest.mark.heavy(30)

LEAKY = str(REPO / "tests" / "support" / "leaky_agent.py")
# Shaped like a real key, with the characters that make its encodings differ from it.
SECRET = "sk-nbtest-" + secrets.token_hex(10) + "+/Q="
CONTROL = "sk-nbctrl-" + secrets.token_hex(10) + "+/Q="
ENV = "NEWSBENCH_TEST_SECRET"


def _manifest(directory: Path, name: str, value: str) -> None:
    manifest = {
        "name": name,
        "version": "1",
        "adapter": "command",
        "channel": "main",
        "params": {
            "command": ["{python}", LEAKY, "{cdp_url}", "{answer_file}", "{url}"],
            "env": {"LEAKY_SECRET": value},
            "timeout_s": 30,
        },
    }
    (directory / f"{name}.yaml").write_text(yaml.safe_dump(manifest), encoding="utf-8")


@contextlib.contextmanager
def printed(path: Path):
    """Everything the process writes to its stdout and stderr (Dagster's console log, any
    print, Chromium's messages), into `path`: the file descriptors and Python's streams."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with path.open("w", encoding="utf-8") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            with contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
                yield
        finally:
            f.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


@pytest.fixture(scope="module")
def pipeline(newsroom_server, tmp_path_factory):
    """One site-day through feed_items .. run_scores with the leaky agent and its control."""
    tmp = tmp_path_factory.mktemp("secrets")
    agents = tmp / "agents"
    agents.mkdir()
    _manifest(agents, "leaky", "${" + ENV + "}")  # a secret: from the environment
    _manifest(agents, "control", CONTROL)  # the control: a literal, not a secret
    db = tmp / "wh.duckdb"
    resources = local_resources(  # the default browser: every artifact kind, the screenshot too
        db,
        tmp / "artifacts",
        port=newsroom_server.port,
        seed=newsroom_server.newsroom.seed,
        agents=AgentRegistryResource(directory=str(agents)),
        tasks=TaskSetResource(intents=["find_top_headline"]),
    )
    with frozen_now(newsroom_server):
        day = newsroom_server.now().date().isoformat()
        with pytest.MonkeyPatch.context() as mp, instance_for_test() as instance:
            mp.setenv(ENV, SECRET)
            with printed(tmp / "printed.txt"):
                result = materialize(
                    ASSETS,
                    selection=["feed_items", "news_tasks", "agent_runs", "run_scores"],
                    partition_key=MultiPartitionKey({"site": "harbor", "day": day}),
                    resources=resources,
                    instance=instance,
                    raise_on_error=False,
                )
            logs = [
                json.dumps({"message": e.user_message, "event": repr(e.dagster_event)}, default=str)
                for e in instance.all_logs(result.run_id)
            ]
    assert result.success
    with duckdb.connect(str(db), read_only=True) as con:
        tables = [
            t
            for (t,) in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'newsbench'"
            ).fetchall()
        ]
        warehouse = {}
        for table in tables:
            cursor = con.execute(f"SELECT * FROM newsbench.{table}")
            columns = [d[0] for d in cursor.description]
            warehouse[table] = [dict(zip(columns, r, strict=True)) for r in cursor.fetchall()]
    return (
        warehouse,
        tmp / "artifacts",
        logs + [(tmp / "printed.txt").read_text("utf-8", "replace")],
    )


def _runs_of(warehouse: dict, agent: str) -> list[dict]:
    runs = [r for r in warehouse["agent_runs"] if r["agent_name"] == agent]
    assert runs, f"no run of {agent}"
    return runs


def _folder(artifacts: Path, run: dict) -> Path:
    (folder,) = [p for p in artifacts.rglob(run["run_id"]) if p.is_dir()]
    return folder


def test_the_secret_is_in_no_warehouse_column(pipeline):
    warehouse, _, _ = pipeline
    leaks = {
        f"{table}.{column}": hits
        for table, rows in warehouse.items()
        for row in rows
        for column, value in row.items()
        if (hits := found(str(value), SECRET))
    }
    assert not leaks, leaks
    # The control's value is everywhere the agent put it: the scan finds what is there.
    for run in _runs_of(warehouse, "control"):
        for column in ("answer", "trajectory", "observation", "request_log", "console_errors"):
            assert found(str(run[column]), CONTROL), column
        assert set(found(str(run["request_log"]), CONTROL)) >= {"plain", "base64", "quote"}
    # And the leaky agent did put the secret there: its markers are where the value was.
    for run in _runs_of(warehouse, "leaky"):
        for column in ("answer", "observation", "request_log", "console_errors"):
            assert f"[redacted:{ENV}]" in str(run[column]), column


def test_the_secret_is_in_no_artifact_nor_trace_member(pipeline):
    warehouse, artifacts, _ = pipeline
    assert not leaks_in_tree(artifacts, SECRET)
    kinds = (
        "run.json",
        "har.json",
        "console.json",
        "spans.jsonl",
        "a11y.yaml",
        "trace.zip",
        "command_stdout.txt",
        "command_stderr.txt",
    )
    for run in _runs_of(warehouse, "control"):
        leaked = leaks_in_tree(_folder(artifacts, run), CONTROL)
        for kind in kinds:
            assert any(k.startswith(f"./{kind}") for k in leaked), (kind, sorted(leaked))
        # Inside the trace: its event log (snapshots, console) and its network log.
        assert any("trace.zip!trace.trace" in k for k in leaked), sorted(leaked)
        # The network log holds the query read back as a form ('+' a space) too.
        assert "form-decoded" in leaked["./trace.zip!trace.network"], leaked
    for run in _runs_of(warehouse, "leaky"):
        folder = _folder(artifacts, run)
        assert (folder / "final.png").exists()  # pixels: kept as they are
        assert f"[redacted:{ENV}]" in (folder / "a11y.yaml").read_text()
        # The trace was rewritten, and is still a whole trace.
        with zipfile.ZipFile(folder / "trace.zip") as trace:
            assert trace.testzip() is None
            assert {"trace.trace", "trace.network"} <= set(trace.namelist())
            assert f"[redacted:{ENV}]".encode() in trace.read("trace.network")


def test_the_secret_is_in_no_log_line(pipeline):
    _, _, logs = pipeline
    # Dagster's event log (each run's line, the materializations' metadata) and what the
    # process printed meanwhile.
    assert any("run 2/2" in line for line in logs) and "agent_runs" in logs[-1]
    assert not [line for line in logs if found(line, SECRET)]
