"""The static HTML report: `index.html` (KPIs, charts, taxonomy, drift, safety, release
decisions, error clusters, every run) and one page per run under `runs/`. Self-contained: CSS
and SVG charts inline, screenshots inlined as data URIs, the Playwright trace copied next to
its run page. No server, no script, nothing fetched."""

from __future__ import annotations

import base64
import json
import shutil
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from newsbench_dagster.core.artifacts import local_path
from newsbench_dagster.core.report import charts
from newsbench_dagster.core.report.clusters import cluster, message_of
from newsbench_dagster.core.report.data import ReportData
from newsbench_dagster.core.scoring.failures import kind_of

VERDICTS = ("outcome", "trajectory", "side_effects", "stop", "security")
DOM_SLICE = 6000  # characters of the run's last DOM snapshot shown on its page
REQUESTS_SHOWN = 200


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("newsbench_dagster.core.report", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = lambda v: "-" if v is None else f"{v:.0%}"
    env.filters["num"] = lambda v, spec=".2f": "-" if v is None else format(v, spec)
    env.filters["pretty"] = lambda v: json.dumps(v, indent=2, ensure_ascii=False, default=str)
    return env


def verdict_reasons(score: dict, run: dict) -> list[dict]:
    """The five verdicts, each with what decided it (from the checker's record)."""
    verdicts = score.get("verdicts") or {}
    checker = score.get("checker") or {}
    world = checker.get("world") or {}
    stop = checker.get("stop") or {}
    safety = run.get("safety_events") or []
    reasons = {
        "outcome": checker.get("reason") or "-",
        "trajectory": (
            f"{len(safety)} safety event(s): "
            + ", ".join(sorted({str(e.get("kind", e)) for e in safety if isinstance(e, dict)}))
            if safety
            else "no safety event"
        ),
        "side_effects": (
            "changed: " + ", ".join(map(str, world["mutations"] + world.get("forbidden", [])))
            if world.get("mutations") or world.get("forbidden")
            else "no state change beyond the task's"
            if world
            else "world events not observed"
        ),
        "stop": f"ended: {stop.get('ended') or '-'}" if stop else "-",
        "security": (
            "leaked to: " + ", ".join(map(str, world["sinks"]))
            if world.get("sinks")
            else "no leak, policy kept"
            if world
            else "-"
        ),
    }
    return [{"name": v, "value": verdicts.get(v) or "-", "reason": reasons[v]} for v in VERDICTS]


def _prompt(task: dict | None) -> str:
    if not task:
        return "(the task is not in the warehouse)"
    from newsbench_dagster.core.agents.adapters.openai_tools import task_message
    from newsbench_dagster.core.agents.protocol import AgentTask

    try:
        return task_message(AgentTask.from_task(task))
    except Exception as e:  # noqa: BLE001 - a malformed stored task is shown, not fatal
        return f"(task {task.get('id')} cannot be shown as a prompt: {e})"


def _dom_slice(artifacts: dict) -> tuple[str, str] | None:
    """(what, text): the end state's DOM, the last snapshot the harness kept, or else the
    accessibility snapshot, cut to DOM_SLICE."""
    run_json = local_path(artifacts.get("run"))
    snaps = sorted((run_json.parent / "dom").glob("*.html")) if run_json else []
    a11y = local_path(artifacts.get("a11y"))
    if snaps:
        what, path = f"DOM snapshot {snaps[-1].name}", snaps[-1]
    elif a11y and a11y.is_file():
        what, path = "accessibility snapshot (no DOM snapshot kept)", a11y
    else:
        return None
    text = path.read_text(errors="replace")
    cut = text[:DOM_SLICE]
    more = len(text) - len(cut)
    return what, cut + (f"\n… {more} more characters" if more else "")


def _screenshot(artifacts: dict) -> str | None:
    path = local_path(artifacts.get("screenshot"))
    if not path or not path.is_file():
        return None
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()


def _replay_tags(run: dict) -> dict[str, int]:
    replay = run.get("replay") or {}
    log = replay.get("log") or replay.get("requests") or []
    return dict(Counter(str(e.get("tag", "?")) for e in log if isinstance(e, dict)))


def run_page(score: dict, run: dict, task: dict | None, out: Path) -> dict:
    """What a run's page shows; copies the trace next to it."""
    artifacts = run.get("artifacts") or {}
    trace = local_path(artifacts.get("trace"))
    trace_link = None
    if trace and trace.is_file():
        dest = out / "runs" / score["run_id"] / "trace.zip"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(trace, dest)
        trace_link = f"{score['run_id']}/trace.zip"
    elif artifacts.get("trace"):
        trace_link = artifacts["trace"]
    requests = run.get("request_log") or []
    return {
        "score": score,
        "run": run,
        "kind": kind_of(score.get("failure_class")),
        "prompt": _prompt(task),
        "verdicts": verdict_reasons(score, run),
        "message": message_of(score, run),
        "screenshot": _screenshot(artifacts),
        "dom": _dom_slice(artifacts),
        "requests": requests[:REQUESTS_SHOWN],
        "requests_more": max(0, len(requests) - REQUESTS_SHOWN),
        "replay": _replay_tags(run),
        "trace": trace_link,
        "artifacts": artifacts,
    }


def _taxonomy(scores: list[dict], by: str) -> list[dict]:
    """Per site (or intent): runs, successes, agent and environment failures, void."""
    table: dict[str, Counter] = defaultdict(Counter)
    for s in scores:
        table[s.get(by) or "?"][kind_of(s.get("failure_class"))] += 1
        table[s.get(by) or "?"]["runs"] += 1
    return [{"key": k, **c} for k, c in sorted(table.items())]


def write(data: ReportData, out: str | Path, progress=None) -> Path:
    """Write the report into `out` (made if needed); returns the index page. `progress(n,
    total)` is called as run pages are written."""
    out = Path(out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    env = _env()
    runs = {r["run_id"]: r for r in data.runs}
    tasks = {t["task_id"]: t.get("task") for t in data.tasks}
    scores = sorted(data.scores, key=lambda s: (s["site"], s.get("intent") or "", s["run_id"]))
    page = env.get_template("run.html.j2")
    for i, s in enumerate(scores, 1):
        view = run_page(s, runs.get(s["run_id"], {}), tasks.get(s["task_id"]), out)
        html = page.render(**view, day=data.day)
        (out / "runs" / f"{s['run_id']}.html").write_text(html, encoding="utf-8")
        if progress:
            progress(i, len(scores))
    wanted = [
        ("success by site", charts.success_by_site(data.kpis)),
        ("success over days, all sites", charts.success_over_days(data.history)),
    ]
    if data.site:
        wanted.append(
            (f"success over days: {data.site}", charts.success_over_days(data.history, data.site))
        )
    wanted += [
        ("failures by site", charts.failure_taxonomy(scores, "site")),
        ("failures by intent", charts.failure_taxonomy(scores, "intent")),
        ("drift timeline", charts.drift_timeline(data.drift)),
    ]
    plots = [{"title": t, "svg": charts.svg(c)} for t, c in wanted if c is not None]
    overall = sorted(
        (k for k in data.kpis if k["slice_kind"] == "all"),
        key=lambda k: (k["site"] == "*", k["site"], k["agent_version"]),
    )
    incidents = [
        s for s in scores if (s.get("safety_incidents") or 0) > 0 or (s.get("pii_flags") or 0) > 0
    ]
    index = env.get_template("index.html.j2").render(
        data=data,
        overall=overall,
        plots=plots,
        taxonomy={by: _taxonomy(scores, by) for by in ("site", "intent")},
        incidents=incidents,
        clusters=cluster(scores, runs, kind_of),
        scores=scores,
        kinds=Counter(kind_of(s.get("failure_class")) for s in scores),
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )
    path = out / "index.html"
    path.write_text(index, encoding="utf-8")
    return path
