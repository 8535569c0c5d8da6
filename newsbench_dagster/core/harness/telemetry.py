"""OpenTelemetry spans for a finished run: one root span, one child per tool call.

The spans are built after the run from its row (the trajectory already holds each call's
offset and latency), so the agent's loop pays nothing while it runs. They go to an OTLP/HTTP
collector when one is configured, else (or when the collector fails) to a JSON-lines file
beside the run's other artifacts. Exporting never raises: telemetry must not fail a run.

No global tracer provider is touched (other code may own it); the trace id derives from the
run id, so exporting the same run twice yields the same trace and the same span ids.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from newsbench_dagster.core.secrets import Redactor

SCOPE = InstrumentationScope("newsbench_dagster.core.harness.telemetry", "1")
SERVICE_NAME = "newsbench"
ROOT_SPAN_NAME = "newsbench.run"
EXPORT_TIMEOUT_S = 2.0  # a collector that cannot answer in 2 s is down; the file takes over
MAX_STR = 256  # attribute strings are capped: a typed value or an answer can be long
MAX_ARGS = 16  # arguments kept per tool call
MAX_ERROR = 512

# Attribute keys. Semantic conventions where one fits (GenAI agent/tool spans, url, http,
# error), `newsbench.*` for the rest.
RUN_ID = "newsbench.run.id"
TASK_ID = "newsbench.task.id"
TASK_SEED = "newsbench.task.seed"
TRIAL = "newsbench.trial"
TOOL_NAME = "gen_ai.tool.name"

_EXPORTER_LOGGER = "opentelemetry.exporter.otlp"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


# -- building spans ------------------------------------------------------------------------------
def trace_id_for(run_id: str) -> int:
    """A 128-bit trace id from the run id: re-exports of a run land in the same trace."""
    return _nonzero(hashlib.sha256(f"newsbench-trace:{run_id}".encode()).digest()[:16])


def span_id_for(run_id: str, index: int) -> int:
    """A 64-bit span id: index -1 is the root, 0.. the trajectory's tool calls in order."""
    return _nonzero(hashlib.sha256(f"newsbench-span:{run_id}:{index}".encode()).digest()[:8])


def _nonzero(digest: bytes) -> int:
    # An all-zero id is invalid in OTLP; astronomically unlikely, but cheap to rule out.
    return int.from_bytes(digest, "big") or 1


def _context(trace_id: int, span_id: int) -> SpanContext:
    sampled = TraceFlags(TraceFlags.SAMPLED)  # built after the fact: every run is recorded
    return SpanContext(trace_id, span_id, is_remote=False, trace_flags=sampled)


def _epoch_ns(value: Any) -> int | None:
    """A row timestamp (aware datetime, or its ISO string after a JSON round trip) in ns."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return None  # a naive time is ambiguous; the caller falls back to t0
        # Exact integer µs: a float timestamp() would be off by a µs now and then.
        return (value - _EPOCH) // timedelta(microseconds=1) * 1000
    return None


def _cap(text: str, limit: int = MAX_STR) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _attr_value(value: Any) -> str | bool | int | float | None:
    """An OTel-legal scalar: strings capped, containers as capped compact JSON."""
    if value is None:
        return None
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return _cap(value)
    return _cap(json.dumps(value, default=str, sort_keys=True, separators=(",", ":")))


def _safe_key(key: Any) -> str:
    # Argument names come from tool code, but a model-driven adapter could pass anything.
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in str(key))
    return cleaned[:64] or "_"


def _common(row: dict) -> dict[str, Any]:
    """What every span of the run carries, so any one span can be filtered to its run/seed."""
    env = row.get("environment") or {}
    attrs = {
        RUN_ID: row.get("run_id"),
        TASK_ID: row.get("task_id"),
        TASK_SEED: env.get("task_seed"),
        TRIAL: row.get("trial"),
    }
    return {k: v for k, v in attrs.items() if v is not None}


def _root_attributes(row: dict, n_calls: int) -> dict[str, Any]:
    env = row.get("environment") or {}
    attrs: dict[str, Any] = {
        **_common(row),
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": row.get("agent_name"),
        "gen_ai.agent.version": row.get("agent_version"),
        "newsbench.agent.name": row.get("agent_name"),
        "newsbench.agent.version": row.get("agent_version"),
        "newsbench.site": row.get("site"),
        "newsbench.intent": row.get("intent"),
        "newsbench.run.status": row.get("run_status"),
        "newsbench.run.env_failure": row.get("env_failure"),
        "newsbench.run.failure_class": row.get("failure_class"),
        "newsbench.run.steps": row.get("steps"),
        "newsbench.run.tool_calls": n_calls,
        "newsbench.browser.version": env.get("browser_version"),
        "gen_ai.request.model": env.get("model"),
        "url.full": row.get("entry_url"),
    }
    if row.get("error"):
        attrs["newsbench.run.error"] = _cap(str(row["error"]), MAX_ERROR)
    return {k: _attr_value(v) for k, v in attrs.items() if v is not None}


def _tool_attributes(row: dict, index: int, call: dict) -> dict[str, Any]:
    tool = str(call.get("tool") or "unknown")
    attrs: dict[str, Any] = {
        **_common(row),
        "gen_ai.operation.name": "execute_tool",
        TOOL_NAME: tool,
        "newsbench.tool.name": tool,
        "newsbench.tool.step": index,
        "newsbench.tool.status": call.get("status"),
        "newsbench.tool.t_s": call.get("t"),
        "newsbench.tool.latency_ms": call.get("latency_ms"),
        "newsbench.tool.tabs": call.get("tabs"),
        "url.full": call.get("url"),
        "http.response.status_code": call.get("http_status"),
    }
    args = call.get("args")
    if isinstance(args, Mapping):
        # Target kwargs and typed values are kept (tasks carry test inputs, not secrets), capped.
        for i, (key, value) in enumerate(sorted(args.items(), key=lambda kv: str(kv[0]))):
            if i == MAX_ARGS:
                attrs["newsbench.tool.args_dropped"] = len(args) - MAX_ARGS
                break
            attrs[f"newsbench.tool.args.{_safe_key(key)}"] = value
    if call.get("status") not in (None, "ok"):
        attrs["error.type"] = str(call["status"])
    if call.get("error"):
        attrs["newsbench.tool.error"] = _cap(str(call["error"]), MAX_ERROR)
    return {k: v for k, v in ((k, _attr_value(v)) for k, v in attrs.items()) if v is not None}


def run_spans(row: dict, t0_epoch_ns: int | None) -> list[ReadableSpan]:
    """The run's spans, root first. `t0_epoch_ns` is the wall clock at the agent's t=0, the
    origin of each trajectory entry's `t`; without it (no agent ever ran) only the root."""
    run_id = str(row.get("run_id") or "")
    trace_id = trace_id_for(run_id)
    resource = Resource({"service.name": SERVICE_NAME})  # built once: per-span default is slow
    root_ctx = _context(trace_id, span_id_for(run_id, -1))

    calls = [c for c in (row.get("trajectory") or []) if isinstance(c, Mapping)]
    children: list[ReadableSpan] = []
    for index, call in enumerate(calls if t0_epoch_ns is not None else []):
        start = (t0_epoch_ns or 0) + round(float(call.get("t") or 0.0) * 1e9)
        # A call cut short (budget, cancellation) may lack a latency: a zero-length span.
        end = start + round(float(call.get("latency_ms") or 0.0) * 1e6)
        failed = call.get("status") not in (None, "ok")
        status = (
            Status(StatusCode.ERROR, _cap(str(call.get("error") or call.get("status")), MAX_ERROR))
            if failed
            else Status(StatusCode.UNSET)
        )
        children.append(
            ReadableSpan(
                name=f"tool.{_cap(str(call.get('tool') or 'unknown'), 64)}",
                context=_context(trace_id, span_id_for(run_id, index)),
                parent=root_ctx,
                resource=resource,
                attributes=_tool_attributes(row, index, dict(call)),
                kind=SpanKind.INTERNAL,
                status=status,
                start_time=start,
                end_time=end,
                instrumentation_scope=SCOPE,
            )
        )

    # The root covers the whole run: from `started_at` (a little before t0) to `ended_at`, and
    # never narrower than its children whatever the clocks say.
    starts = [s for s in (_epoch_ns(row.get("started_at")), t0_epoch_ns) if s is not None]
    starts += [c.start_time for c in children if c.start_time is not None]
    root_start = min(starts) if starts else time.time_ns()
    ends = [e for e in (_epoch_ns(row.get("ended_at")),) if e is not None]
    ends += [c.end_time for c in children if c.end_time is not None]
    root_end = max([root_start, *ends])
    env_failure = row.get("env_failure")
    root_status = (
        Status(StatusCode.ERROR, _cap(f"{env_failure}: {row.get('error') or ''}", MAX_ERROR))
        if env_failure
        else Status(StatusCode.UNSET)  # a wrong answer is the agent's outcome, not a span error
    )
    root = ReadableSpan(
        name=ROOT_SPAN_NAME,
        context=root_ctx,
        parent=None,
        resource=resource,
        attributes=_root_attributes(row, len(children)),
        kind=SpanKind.INTERNAL,
        status=root_status,
        start_time=root_start,
        end_time=root_end,
        instrumentation_scope=SCOPE,
    )
    return [root, *children]


def spans_jsonl(spans: list[ReadableSpan]) -> bytes:
    """One span per line, OTLP-JSON-like (hex ids, unix-nano times), for the file fallback."""
    lines = []
    for span in spans:
        ctx = span.context
        assert ctx is not None
        record = {
            "trace_id": f"{ctx.trace_id:032x}",
            "span_id": f"{ctx.span_id:016x}",
            "parent_span_id": f"{span.parent.span_id:016x}" if span.parent else None,
            "name": span.name,
            "kind": span.kind.name,
            "start_time_unix_nano": span.start_time,
            "end_time_unix_nano": span.end_time,
            "attributes": dict(span.attributes or {}),
            "status": {"code": span.status.status_code.name, "message": span.status.description},
            "resource": dict(span.resource.attributes),
            "scope": SCOPE.name,
        }
        lines.append(json.dumps(record, sort_keys=True, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode()


# -- configuration -------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpanExporterConfig:
    """Where spans go. `headers` may carry credentials: kept out of repr and summaries."""

    endpoint: str | None = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    timeout_s: float = EXPORT_TIMEOUT_S

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> SpanExporterConfig:
        endpoint, headers = otlp_endpoint_from_env(environ)
        return cls(endpoint=endpoint, headers=headers)


def otlp_endpoint_from_env(environ: Mapping[str, str]) -> tuple[str | None, dict[str, str]]:
    """The OTLP/HTTP traces endpoint and headers from the standard variables, read when called
    (never at import): the traces-specific endpoint is used as is, the generic one gets
    `/v1/traces` appended, as the OTLP exporter spec says."""
    from opentelemetry.util.re import parse_env_headers

    endpoint = (environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or "").strip() or None
    if endpoint is None:
        base = (environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "").strip()
        endpoint = base.rstrip("/") + "/v1/traces" if base else None
    raw = environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or environ.get(
        "OTEL_EXPORTER_OTLP_HEADERS", ""
    )
    return endpoint, dict(parse_env_headers(raw, liberal=True)) if raw else {}


def redact_endpoint(endpoint: str) -> str:
    """The endpoint without userinfo, query or fragment: those can hold credentials."""
    try:
        parts = urlsplit(endpoint)
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        if parts.port is not None:
            netloc += f":{parts.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return "<unparseable endpoint>"


# -- exporting -----------------------------------------------------------------------------------
class _ThreadErrors(logging.Handler):
    """Collects the OTLP exporter's warnings on this thread: failures that never reach the
    network (encoding, an oversized batch) are only logged."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.thread = threading.get_ident()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            try:
                self.messages.append(record.getMessage())
            except Exception:  # noqa: BLE001 - a bad log record must not break the export
                self.messages.append(str(record.msg))


@contextmanager
def _capture_exporter_errors() -> Iterator[_ThreadErrors]:
    handler = _ThreadErrors()
    logger = logging.getLogger(_EXPORTER_LOGGER)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def _redact(text: str, endpoint: str, headers: Mapping[str, str]) -> str:
    """`text` without header values or the endpoint's credentials (userinfo, query)."""
    # Header values shorter than 8 are names and flags (gzip, true), not credentials.
    secrets = {f"otlp header {k}": v for k, v in headers.items() if len(v) >= 8}
    try:
        parts = urlsplit(endpoint)
        secrets.update({"otlp password": parts.password or "", "otlp query": parts.query})
    except ValueError:
        pass
    return _cap(Redactor(secrets).text(text), MAX_ERROR)


def _export_otlp(
    spans: list[ReadableSpan], endpoint: str, headers: Mapping[str, str], timeout_s: float
) -> str | None:
    """Send the spans synchronously; None on success, else why not (no header values)."""
    import requests
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    class RecordingSession(requests.Session):
        """`export()` only says FAILURE; the session sees why (refused, HTTP 4xx, timeout)
        whichever way the exporter retries."""

        last_problem: str | None = None

        def request(self, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
            try:
                response = super().request(*args, **kwargs)
            except Exception as e:
                self.last_problem = f"{type(e).__name__}: {e}"
                raise
            if response.status_code >= 400:
                self.last_problem = f"HTTP {response.status_code} {response.reason}"
            return response

    session = RecordingSession()
    with _capture_exporter_errors() as errors:
        exporter = OTLPSpanExporter(
            endpoint=endpoint, headers=dict(headers), timeout=timeout_s, session=session
        )
        try:
            result = exporter.export(spans)
        finally:
            exporter.shutdown()  # closes the session
    if result is SpanExportResult.SUCCESS:
        return None
    # The cause first (refused, HTTP status), then what the exporter said (gave up, encoding).
    reasons = [session.last_problem, *errors.messages]
    return _redact(
        "; ".join(dict.fromkeys(r for r in reasons if r)) or "export failed", endpoint, headers
    )


def export_run_spans(
    row: dict,
    t0_epoch_ns: int | None,
    *,
    endpoint: str | None,
    headers: Mapping[str, str] | None = None,
    file_writer: Callable[[bytes], str] | None = None,
    timeout_s: float = EXPORT_TIMEOUT_S,
) -> dict[str, Any]:
    """Export the run's spans; a summary for the run row, never an exception:
    {"spans": n, "exported": "otlp"|"file"|None, "uri": ..., "error": ..., "fallback_from": ...}.

    With an endpoint, OTLP/HTTP protobuf; if that fails, the error is kept and the spans go to
    `file_writer` (bytes -> URI) instead. Without an endpoint, straight to the file."""
    summary: dict[str, Any] = {"spans": 0, "exported": None, "uri": None, "error": None}
    try:
        spans = run_spans(row, t0_epoch_ns)
    except Exception as e:  # noqa: BLE001 - a malformed row must not fail the run
        summary["error"] = _cap(f"building spans: {type(e).__name__}: {e}", MAX_ERROR)
        return summary
    summary["spans"] = len(spans)

    if endpoint:
        try:
            otlp_error = _export_otlp(spans, endpoint, headers or {}, timeout_s)
        except Exception as e:  # noqa: BLE001 - e.g. a malformed endpoint URL
            otlp_error = _redact(f"{type(e).__name__}: {e}", endpoint, headers or {})
        if otlp_error is None:
            summary.update(exported="otlp", uri=redact_endpoint(endpoint))
            return summary
        summary.update(error=f"otlp: {otlp_error}", fallback_from="otlp")

    if file_writer is not None:
        try:
            summary.update(exported="file", uri=file_writer(spans_jsonl(spans)))
        except Exception as e:  # noqa: BLE001 - the artifact store may be down too
            file_error = f"file: {type(e).__name__}: {e}"
            summary["error"] = "; ".join(filter(None, [summary["error"], file_error]))
    return summary


def spans_key(row: dict) -> str:
    """The artifact key of the span file, beside the run's run.json."""
    return f"runs/{row['site']}/{row['day']}/{row['run_id']}/spans.jsonl"
