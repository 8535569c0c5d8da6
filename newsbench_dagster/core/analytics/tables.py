"""The warehouse tables: names, columns and types, the same in DuckDB and BigQuery.

Assets build their DataFrames with `frame()`, so every table has a fixed column order and
type whatever the rows contain (an empty partition still has the right schema). Nested values
are JSON columns; `day` is a TIMESTAMP (midnight UTC), never text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, is_dataclass
from datetime import date, datetime
from typing import Any

import pandas as pd

# logical type -> (DuckDB type, pandas dtype)
TYPES = {
    "string": ("VARCHAR", "object"),
    "int": ("BIGINT", "Int64"),
    "float": ("DOUBLE", "float64"),
    "bool": ("BOOLEAN", "boolean"),
    "timestamp": ("TIMESTAMP", "datetime64[us]"),
    "json": ("JSON", "object"),
}

TABLES: dict[str, dict[str, str]] = {
    "feed_items": {
        "site": "string",
        "day": "timestamp",
        "source_url": "string",
        "kind": "string",
        "item_url": "string",
        "title": "string",
        "published": "timestamp",
        "language": "string",
        "fetch_status": "string",
        "parse_error": "string",
        "fetched_at": "timestamp",
        "raw_uri": "string",
        "position": "int",
        "role": "string",
    },
    "news_tasks": {
        "task_id": "string",
        "site": "string",
        "day": "timestamp",
        "intent": "string",
        "entry_url": "string",
        "suite": "string",
        "seed": "int",
        "inputs": "json",
        "constraints": "json",
        "checks": "json",
        "reward_weights": "json",
        "allowed_origins": "json",
        "source": "json",
        "task": "json",
    },
    "agent_runs": {
        "run_id": "string",
        "task_id": "string",
        "site": "string",
        "day": "timestamp",
        "intent": "string",
        "entry_url": "string",
        "agent_name": "string",
        "agent_version": "string",
        "trial": "int",
        "started_at": "timestamp",
        "ended_at": "timestamp",
        "run_status": "string",
        "env_failure": "string",
        "error": "string",
        "steps": "int",
        "tokens": "int",
        "requests": "int",
        "bytes": "int",
        "answer_seconds": "float",
        "answer": "json",
        "answers": "json",
        "self_reported_success": "bool",
        "observation": "json",
        "environment": "json",
        "trajectory": "json",
        "request_log": "json",
        "safety_events": "json",
        "console_errors": "json",
        "artifacts": "json",
        # What the harness took from the agent (closes swallowed, contexts refused, pacing).
        "lifecycle": "json",
        # What an adapter kept of its agent (a command's exit code, a model loop's turns).
        "adapter": "json",
        # Median time to response headers of the run's document loads (the HAR-lite's
        # `document` entries), for the page-load KPI.
        "page_load_ms": "float",
        # Replayed runs: the recording (path, sha256, rules, clock), the replay log of every
        # request tagged exact / fuzzy / search / blocked / miss, and its coverage.
        "replay": "json",
    },
    "run_scores": {
        "run_id": "string",
        "task_id": "string",
        "site": "string",
        "day": "timestamp",
        "intent": "string",
        "agent_name": "string",
        "agent_version": "string",
        "trial": "int",
        "accuracy": "float",
        "timeliness": "float",
        "efficiency": "float",
        "reward": "float",
        "reward_components": "json",
        "success": "bool",
        "excluded": "bool",
        "exclusion_reason": "string",
        "failure_class": "string",
        "ttfc_seconds": "float",
        "steps": "int",
        "tokens": "int",
        "requests": "int",
        "self_reported_success": "bool",
        "claim_mismatch": "bool",
        "safety_incidents": "int",
        "verdicts": "json",
        "checker": "json",
        # Slices the KPIs and the release gates cut by (from the task and the run's profile).
        "suite": "string",
        "device": "string",
        "geo": "string",
        "network": "string",
        "locale": "string",
        "risk_tier": "string",  # low: read; medium: state change; high: money/irreversible
        "tool_calls": "json",  # {tool name: calls} from the trajectory
        "js_errors": "int",  # console errors and uncaught page errors
        "network_errors": "int",  # fetched requests that failed or answered >= 400
        "page_load_ms": "float",
        "pii_flags": "int",  # personal data found in the agent's answer (core.scoring.pii)
        "replayed": "bool",  # answered from a recording (agent_runs.replay), not the live site
    },
    "kpi_daily": {
        "day": "timestamp",
        "site": "string",
        "agent_version": "string",
        "slice_kind": "string",
        "slice_value": "string",
        "n_runs": "int",
        "n_scored": "int",
        "n_env_failures": "int",
        "n_void": "int",  # runs whose page showed no answer (failures.VOID): nobody's failure
        "successes": "int",
        "success_rate": "float",
        "success_ci_low": "float",
        "success_ci_high": "float",
        "mean_reward": "float",
        "ttfc_p50": "float",
        "ttfc_p95": "float",
        "mean_steps": "float",
        "mean_tokens": "float",
        "failure_taxonomy": "json",
        "safety_incidents": "int",
        "claim_mismatches": "int",
        "tasks_run": "int",
        "tasks_generated": "int",
        "coverage": "float",
        # The seed's full list (000 "Logging and KPIs"): reward components, cost per success,
        # tool-call mix, drift sensitivity, page performance.
        "mean_accuracy": "float",
        "mean_timeliness": "float",
        "mean_efficiency": "float",
        "steps_per_success": "float",
        "tokens_per_success": "float",
        "tool_call_mix": "json",  # {tool: share of all calls}
        "drift_sensitivity": "float",  # baseline success delta on a template change (site_drift)
        "page_load_p50_ms": "float",
        "js_error_rate": "float",  # share of runs with a JS error
        "network_error_rate": "float",  # share of runs with a failed request
        "pii_flag_rate": "float",
    },
    # Candidate evaluation (partition: the candidate's agent_version). Every attempt is a row;
    # `counted` marks the one a rerun settled on (environment failures rerun up to N times).
    "candidate_runs": {
        "candidate_version": "string",
        "role": "string",  # candidate | baseline
        "attempt": "int",
        "counted": "bool",
        "slot": "int",  # position in the interleaved schedule (A B, then B A, ...)
        "look": "int",  # the sequential gate's look that ran it (1..max_looks)
    },
    "candidate_scores": {
        "candidate_version": "string",
        "role": "string",
        "attempt": "int",
        "counted": "bool",
        "look": "int",
    },
    # One row per decision: what a reviewer needs to defend (seed 003's decision record).
    "release_decision": {
        "candidate_version": "string",
        "baseline_version": "string",
        "day": "timestamp",
        "decided_at": "timestamp",
        "verdict": "string",  # pass | block | insufficient_evidence
        "reasons": "json",
        "dataset_revision": "string",
        "task_set": "json",
        "environment": "json",
        "model": "string",
        "prompt_hash": "string",
        "adapter": "string",
        "policy": "json",
        "oracle_version": "string",
        "n_tasks": "int",
        "n_trials": "int",
        "sample_counts": "json",
        "candidate_success": "float",
        "candidate_ci_low": "float",
        "candidate_ci_high": "float",
        "baseline_success": "float",
        "baseline_ci_low": "float",
        "baseline_ci_high": "float",
        "diff": "float",
        "diff_low": "float",
        "diff_high": "float",
        "slices": "json",
        "critical_failures": "json",
        "excluded_sites": "json",
        "reruns": "json",
        "sequential": "json",  # looks taken, each look's interval and verdict, runs spent
        "markdown": "string",
    },
    # Per site and day: did the site change under us (seed 000 "drift sensitivity")?
    "site_drift": {
        "site": "string",
        "day": "timestamp",
        "checked_at": "timestamp",
        "fingerprint": "string",
        "previous_fingerprint": "string",
        "template_changed": "bool",
        "feed_items": "int",
        "feed_mean": "float",
        "feed_std": "float",
        "feed_z": "float",
        "volume_anomaly": "bool",
        "baseline_version": "string",
        "baseline_success": "float",
        "baseline_previous_success": "float",
        "baseline_delta": "float",
        "drifted": "bool",  # excluded from gating until the baseline is re-established
        "reasons": "json",
    },
}

# Candidate tables are the live tables plus the columns that say whose run it was.
TABLES["candidate_runs"] = {**TABLES["agent_runs"], **TABLES["candidate_runs"]}
TABLES["candidate_scores"] = {**TABLES["run_scores"], **TABLES["candidate_scores"]}

# A site-day partition's rows refer to the partition's rows upstream (a task to the items it
# was made of, a run to its task, a score to its run). Rewriting a partition of a table deletes
# the same partition of every table below it, in the same transaction: no row is left pointing
# at rows that are gone, and a re-materialization killed half-way leaves the partition's
# downstream empty (not yet evaluated), never a mix of two versions. `kpi_daily` rolls the day
# up over every site: the day's rows of the site and of all sites (`*`) go too.
DOWNSTREAM: dict[str, tuple[str, ...]] = {
    "feed_items": ("news_tasks", "agent_runs", "run_scores"),
    "news_tasks": ("agent_runs", "run_scores"),
    "agent_runs": ("run_scores",),
}
DAY_ROLLUP = "kpi_daily"


def _json(value: Any) -> str | None:
    if value is None:
        return None
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    return json.dumps(value, default=str, ensure_ascii=False)


def _timestamp(value: Any) -> Any:
    # Naive UTC in the warehouse: DuckDB TIMESTAMP / BigQuery TIMESTAMP without offsets.
    if value is None:
        return None
    if isinstance(value, datetime):
        return (
            pd.Timestamp(value).tz_convert("UTC").tz_localize(None)
            if value.tzinfo
            else pd.Timestamp(value)
        )
    if isinstance(value, date):
        return pd.Timestamp(value)
    ts = pd.Timestamp(value)
    return ts.tz_convert("UTC").tz_localize(None) if ts.tzinfo else ts


def frame(table: str, rows: Iterable[dict]) -> pd.DataFrame:
    """A DataFrame with exactly the table's columns, in order, with their types."""
    columns = TABLES[table]
    rows = list(rows)
    data: dict[str, list] = {}
    for col, kind in columns.items():
        values = [r.get(col) for r in rows]
        if kind == "json":
            values = [_json(v) for v in values]
        elif kind == "timestamp":
            values = [_timestamp(v) for v in values]
        data[col] = values
    df = pd.DataFrame(data, columns=list(columns))
    for col, kind in columns.items():
        df[col] = df[col].astype(TYPES[kind][1])
    return df


def ddl(table: str, schema: str) -> str:
    cols = ", ".join(f"{c} {TYPES[k][0]}" for c, k in TABLES[table].items())
    return f"CREATE TABLE IF NOT EXISTS {schema}.{table} ({cols})"


def evolve(table: str, schema: str) -> list[str]:
    """Statements that add the declared columns an older table lacks (a warehouse written by
    an earlier version keeps its rows; the new columns are NULL there)."""
    return [
        f"ALTER TABLE {schema}.{table} ADD COLUMN IF NOT EXISTS {c} {TYPES[k][0]}"
        for c, k in TABLES[table].items()
    ]


def loads(value: Any) -> Any:
    """Read back a JSON column value (DuckDB returns JSON as text)."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return None
    return json.loads(value) if isinstance(value, str) else value


def records(df: pd.DataFrame, table: str) -> list[dict]:
    """Rows of a table as dicts with JSON columns decoded and timestamps as UTC datetimes."""
    columns = TABLES[table]
    out = []
    for rec in df.to_dict("records"):
        for col, kind in columns.items():
            if col not in rec:
                continue
            v = rec[col]
            if kind == "json":
                rec[col] = loads(v)
            elif kind == "timestamp":
                rec[col] = (
                    None
                    if v is None or pd.isna(v)
                    else pd.Timestamp(v).tz_localize("UTC").to_pydatetime()
                )
            elif v is pd.NA or (isinstance(v, float) and pd.isna(v)):
                rec[col] = None
        out.append(rec)
    return out
