"""Run spans: built from a finished row, exported over OTLP/HTTP to a real loopback collector,
or to a JSON-lines artifact when no collector is configured or the collector is down."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Status as PbStatus

from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.runner import run_id_for
from newsbench_dagster.core.harness.telemetry import (
    MAX_STR,
    SpanExporterConfig,
    export_run_spans,
    otlp_endpoint_from_env,
    run_spans,
    spans_key,
    trace_id_for,
)

SECRET = "Bearer s3cret-collector-token"
SEED = 1234567
STARTED = datetime(2026, 12, 1, 9, 30, 0, 83_456, tzinfo=UTC)  # the row's started_at
STARTED_NS = 1_796_117_400_083_456_000
T0 = STARTED_NS + 40_000_789  # the agent's t=0, ns since the epoch: a little after started_at


def make_row(run_id: str | None = None) -> dict:
    started = STARTED
    return {
        "run_id": run_id or run_id_for("task-lead-1", "ref-1", 0),
        "task_id": "task-lead-1",
        "site": "daily",
        "day": date(2026, 12, 1),
        "intent": "find_top_headline",
        "entry_url": "http://127.0.0.1:8000/daily/",
        "agent_name": "reference",
        "agent_version": "ref-1",
        "trial": 0,
        "started_at": started,
        "ended_at": started + timedelta(seconds=5),
        "run_status": "answered",
        "env_failure": None,
        "error": None,
        "steps": 4,
        "environment": {"task_seed": SEED, "browser_version": "131.0", "model": None},
        "trajectory": [
            {
                "tool": "goto",
                "args": {"url": "http://127.0.0.1:8000/daily/"},
                "t": 0.002,
                "status": "ok",
                "latency_ms": 120.5,
                "http_status": 200,
                "url": "http://127.0.0.1:8000/daily/",
            },
            {
                "tool": "click",
                "args": {"role": "link", "name": "Missing story"},
                "t": 0.2,
                "status": "error",
                "latency_ms": 3000.0,
                "error": "Timeout 3000ms exceeded.",
            },
            {
                "tool": "type",
                "args": {"label": "Search", "value": "x" * 5000, "clear": True},
                "t": 3.25,
                "status": "ok",
                "latency_ms": 42.1,
                "url": "http://127.0.0.1:8000/daily/",
            },
            {"tool": "read", "args": {}, "t": 3.4, "status": "ok", "latency_ms": 8.0},
            {
                "tool": "answer",
                "args": {"value": {"headline": "Harbour bridge reopens"}},
                "t": 3.5,
                "status": "ok",
                "latency_ms": 0.0,
            },
        ],
        "artifacts": {},
    }


@pytest.fixture(autouse=True)
def hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # The OTLP exporter also reads these itself; a developer's shell must not leak in.
    for var in (
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "OTEL_EXPORTER_OTLP_COMPRESSION",
        "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


class Collector:
    """A real OTLP/HTTP receiver on loopback: records every POST, answers `status`."""

    def __init__(self, status: int = 200) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                collector.requests.append((self.path, dict(self.headers.items()), body))
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> Collector:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def collector() -> Iterator[Collector]:
    with Collector() as c:
        yield c


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_lines(store: LocalArtifactStore, uri: str) -> list[dict]:
    return [json.loads(line) for line in store.get(uri).decode().splitlines()]


# -- the file ----------------------------------------------------------------------------------
def test_file_export_one_line_per_call_with_links_timing_and_seed(tmp_path) -> None:
    row = make_row()
    store = LocalArtifactStore(tmp_path)
    summary = export_run_spans(
        row, T0, endpoint=None, file_writer=lambda data: store.put(spans_key(row), data)
    )
    assert summary["exported"] == "file" and summary["error"] is None
    assert summary["spans"] == len(row["trajectory"]) + 1
    assert summary["uri"].endswith(f"runs/daily/2026-12-01/{row['run_id']}/spans.jsonl")

    lines = read_lines(store, summary["uri"])
    assert len(lines) == len(row["trajectory"]) + 1
    root, children = lines[0], lines[1:]
    assert root["name"] == "newsbench.run" and root["parent_span_id"] is None
    assert [c["name"] for c in children] == [f"tool.{c['tool']}" for c in row["trajectory"]]
    assert {line["trace_id"] for line in lines} == {f"{trace_id_for(row['run_id']):032x}"}
    assert all(c["parent_span_id"] == root["span_id"] for c in children)
    assert len({line["span_id"] for line in lines}) == len(lines)

    # Times come from t and latency, in order, inside the root.
    for line, call in zip(children, row["trajectory"], strict=True):
        assert line["start_time_unix_nano"] == T0 + round(call["t"] * 1e9)
        duration = line["end_time_unix_nano"] - line["start_time_unix_nano"]
        assert duration == round(call["latency_ms"] * 1e6)
    starts = [c["start_time_unix_nano"] for c in children]
    assert starts == sorted(starts)
    assert root["start_time_unix_nano"] == STARTED_NS
    assert root["start_time_unix_nano"] <= starts[0]
    assert root["end_time_unix_nano"] >= max(c["end_time_unix_nano"] for c in children)

    # The seed (and the run) on every span; run-level facts on the root.
    for line in lines:
        assert line["attributes"]["newsbench.task.seed"] == SEED
        assert line["attributes"]["newsbench.run.id"] == row["run_id"]
    assert root["attributes"]["newsbench.site"] == "daily"
    assert root["attributes"]["gen_ai.agent.name"] == "reference"
    assert root["attributes"]["newsbench.run.status"] == "answered"
    assert root["status"]["code"] == "UNSET"

    goto, click, typed, _read, answer = children
    assert goto["attributes"]["url.full"] == "http://127.0.0.1:8000/daily/"
    assert goto["attributes"]["http.response.status_code"] == 200
    assert click["status"] == {"code": "ERROR", "message": "Timeout 3000ms exceeded."}
    assert click["attributes"]["newsbench.tool.error"] == "Timeout 3000ms exceeded."
    assert click["attributes"]["error.type"] == "error"
    assert click["attributes"]["newsbench.tool.args.role"] == "link"
    assert click["attributes"]["newsbench.tool.args.name"] == "Missing story"
    assert goto["status"]["code"] == "UNSET" and "error.type" not in goto["attributes"]
    # A typed value is kept but capped; the target kwarg rides along.
    value = typed["attributes"]["newsbench.tool.args.value"]
    assert value.startswith("xxx") and len(value) == MAX_STR
    assert typed["attributes"]["newsbench.tool.args.label"] == "Search"
    assert json.loads(answer["attributes"]["newsbench.tool.args.value"]) == {
        "headline": "Harbour bridge reopens"
    }


def test_trace_and_span_ids_derive_from_the_run_id(tmp_path) -> None:
    row = make_row()
    first, again = run_spans(row, T0), run_spans(make_row(), T0)
    assert [s.context.span_id for s in first] == [s.context.span_id for s in again]
    assert first[0].context.trace_id == trace_id_for(row["run_id"]) != 0
    other = run_spans(make_row(run_id_for("task-lead-1", "ref-1", 1)), T0)
    assert other[0].context.trace_id != first[0].context.trace_id
    # Re-exporting the same run writes the same file, byte for byte.
    written: list[bytes] = []
    for _ in range(2):
        export_run_spans(row, T0, endpoint=None, file_writer=lambda b: written.append(b) or "x")
    assert written[0] == written[1]


def test_a_run_that_never_reached_the_agent_is_one_error_root() -> None:
    row = make_row()
    row.update(trajectory=[], run_status="env_failure", env_failure="site_down", error="HTTP 503")
    spans = run_spans(row, None)
    assert [s.name for s in spans] == ["newsbench.run"]
    assert spans[0].status.status_code.name == "ERROR"
    assert "site_down" in (spans[0].status.description or "")
    assert spans[0].attributes["newsbench.task.seed"] == SEED


def test_a_malformed_row_never_raises() -> None:
    row = make_row()
    row["trajectory"][0]["t"] = "not a number"
    summary = export_run_spans(row, T0, endpoint=None, file_writer=lambda b: "x")
    assert summary["spans"] == 0 and summary["exported"] is None
    assert "building spans" in summary["error"]


def test_a_long_trajectory_gets_a_span_per_call() -> None:
    # What spans cost per run is measured by benchmarks/overhead.py (the "spans" artifact
    # kind), not by a timer here.
    row = make_row()
    one = export_run_spans(row, T0, endpoint=None, file_writer=lambda b: "x")
    calls = len(row["trajectory"])
    row["trajectory"] = row["trajectory"] * 20  # 100 calls, more than any step budget
    long = export_run_spans(row, T0, endpoint=None, file_writer=lambda b: "x")
    assert long["exported"] == "file" and long["error"] is None
    assert long["spans"] - one["spans"] == 19 * calls


# -- OTLP ----------------------------------------------------------------------------------------
def test_otlp_export_reaches_a_real_collector(collector: Collector, caplog) -> None:
    row = make_row()
    written: list[bytes] = []
    summary = export_run_spans(
        row,
        T0,
        endpoint=collector.endpoint,
        headers={"Authorization": SECRET},
        file_writer=lambda b: written.append(b) or "file:///never",
    )
    assert summary == {
        "spans": 6,
        "exported": "otlp",
        "uri": collector.endpoint,
        "error": None,
    }
    assert written == []  # no fallback when the collector took them
    assert SECRET not in json.dumps(summary) and SECRET not in caplog.text

    [(path, headers, body)] = collector.requests
    assert path == "/v1/traces"
    lowered = {k.lower(): v for k, v in headers.items()}
    assert lowered["content-type"] == "application/x-protobuf"
    assert lowered["authorization"] == SECRET  # it was sent, just never echoed back

    request = ExportTraceServiceRequest.FromString(body)
    [resource_spans] = request.resource_spans
    spans = [s for scope in resource_spans.scope_spans for s in scope.spans]
    assert [s.name for s in spans] == [
        "newsbench.run",
        "tool.goto",
        "tool.click",
        "tool.type",
        "tool.read",
        "tool.answer",
    ]
    trace_id = trace_id_for(row["run_id"]).to_bytes(16, "big")
    assert {s.trace_id for s in spans} == {trace_id}
    root = spans[0]
    assert root.parent_span_id == b""
    assert all(s.parent_span_id == root.span_id for s in spans[1:])
    for span in spans:
        attrs = {a.key: a.value for a in span.attributes}
        assert attrs["newsbench.task.seed"].int_value == SEED
    click = spans[2]
    assert click.status.code == PbStatus.STATUS_CODE_ERROR
    click_attrs = {a.key: a.value for a in click.attributes}
    assert click_attrs["gen_ai.tool.name"].string_value == "click"
    assert click_attrs["newsbench.tool.args.role"].string_value == "link"
    assert click.start_time_unix_nano == T0 + 200_000_000
    assert click.end_time_unix_nano == T0 + 3_200_000_000


def test_an_unreachable_collector_falls_back_to_the_file_quickly(tmp_path, caplog) -> None:
    row = make_row()
    store = LocalArtifactStore(tmp_path)
    caplog.set_level(logging.WARNING)
    started = time.perf_counter()
    summary = export_run_spans(
        row,
        T0,
        endpoint=f"http://127.0.0.1:{closed_port()}/v1/traces?api_key=QUERY-SECRET-42",
        headers={"authorization": SECRET},
        file_writer=lambda data: store.put(spans_key(row), data),
        timeout_s=1.0,
    )
    assert time.perf_counter() - started < 4.0
    assert summary["exported"] == "file" and summary["fallback_from"] == "otlp"
    assert summary["error"].startswith("otlp: ") and "refused" in summary["error"].lower()
    assert len(read_lines(store, summary["uri"])) == len(row["trajectory"]) + 1
    assert SECRET not in json.dumps(summary) and SECRET not in caplog.text
    assert "QUERY-SECRET-42" not in json.dumps(summary)


def test_a_collector_refusing_the_batch_falls_back_with_its_status(tmp_path) -> None:
    row = make_row()
    store = LocalArtifactStore(tmp_path)
    with Collector(status=401) as refusing:
        summary = export_run_spans(
            row,
            T0,
            endpoint=refusing.endpoint,
            headers={"authorization": SECRET},
            file_writer=lambda data: store.put(spans_key(row), data),
        )
    assert len(refusing.requests) == 1  # 401 is not retried
    assert summary["exported"] == "file" and "401" in summary["error"]
    assert store.get(summary["uri"]).count(b"\n") == len(row["trajectory"]) + 1


# -- configuration -------------------------------------------------------------------------------
def test_endpoint_and_headers_from_env() -> None:
    assert otlp_endpoint_from_env({}) == (None, {})
    assert otlp_endpoint_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}) == (
        "http://c:4318/v1/traces",
        {},
    )
    endpoint, headers = otlp_endpoint_from_env(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t.example/custom/traces",
            "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20abc,x-team=news",
        }
    )
    assert endpoint == "https://t.example/custom/traces"
    assert headers == {"authorization": "Bearer abc", "x-team": "news"}
    config = SpanExporterConfig.from_env(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS": "k=v1"}
    )
    assert config.endpoint == "http://c:4318/v1/traces" and config.headers == {"k": "v1"}
    assert "v1" not in repr(config).replace("/v1/", "")
