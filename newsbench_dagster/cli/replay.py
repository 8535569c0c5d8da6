"""`newsbench replay ...`: run an agent on tasks replayed offline from recordings, and infer
matching rules from a recording."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from newsbench_dagster.cli.common import (
    agent,
    console,
    err,
    fail,
    print_passed,
    read_tasks,
    run_scored,
    run_settings,
    today,
    verdict_of,
)
from newsbench_dagster.paths import AGENTS_DIR, ARTIFACTS_DIR

app = typer.Typer(help="Replay of recordings: matching rules.", no_args_is_help=True)


@app.command("suggest-rules")
def suggest_rules(
    path: Annotated[Path, typer.Argument(help="A WARC file (ours or another tool's).")],
    out: Annotated[
        Path | None, typer.Option(help="Write the rules here (default: stdout).")
    ] = None,
) -> None:
    """Infer replay rules from a recording, to review: noise query parameters (values that
    change by themselves across loads of one path: epoch or ISO timestamps, hashes, random
    numbers; a parameter that changed without changing the response; cache busters and
    session ids by name), session ids in paths (`;jsessionid=`), canonical-id patterns,
    beacon endpoints. Each rule's evidence is under `evidence`. The file says `source:
    inferred` and is a rules file for `replay run --rules`; hand-written rules win over it."""
    import yaml

    from newsbench_dagster.core.replay.matching import suggest_rules as infer
    from newsbench_dagster.core.replay.warc import exchanges_from_warc

    try:
        rules = infer(exchanges_from_warc(path))
    except (OSError, ValueError) as e:
        fail(str(e) if str(path) in str(e) else f"{path}: unreadable as WARC: {e}", 2)
    text = "# Inferred by `newsbench replay suggest-rules`: review before use.\n" + yaml.safe_dump(
        rules, sort_keys=False, allow_unicode=True
    )
    if out:
        out.write_text(text, encoding="utf-8")
        err.print(f"{out}: rules for {len(rules['sites'])} site(s)")
    else:
        print(text, end="")


def _open_recordings(tasks: list[dict], base_dir: str | None) -> None:
    """Every recording the tasks name, opened before any run: one that cannot be replayed
    (missing, empty, truncated, not WARC, nothing servable) fails the command naming it
    (exit 2), rather than every run being excluded and the command passing; what a
    recording cannot serve, and a truncated one's break, are said once."""
    from newsbench_dagster.core.harness.guard import task_recording
    from newsbench_dagster.core.replay.replayer import RecordingError

    said: set[str] = set()
    for t in tasks:
        try:
            opened = task_recording(t, base_dir)
        except (RecordingError, OSError) as e:
            fail(f"task {t.get('id')}: {e}", 2)
        if opened is None or str(opened.path) in said:
            continue
        said.add(str(opened.path))
        for warning in opened.warnings:
            err.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
        for why in opened.refused:
            err.print(
                f"not replayable (answered as a miss): {why}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )


@app.command("run")
def run(
    tasks_file: Annotated[
        Path,
        typer.Argument(help="Tasks: JSON, JSON lines or YAML, e.g. a suite file in suites/."),
    ],
    agent_manifest: Annotated[Path, typer.Option("--agent", help="The agent's manifest.")] = (
        AGENTS_DIR / "reference.yaml"
    ),
    recording: Annotated[
        Path | None, typer.Option(help="Replay every task from this WARC (else each task's own).")
    ] = None,
    rules: Annotated[list[Path], typer.Option(help="Extra replay rules files.")] = [],  # noqa: B006
    trials: Annotated[int, typer.Option(help="Runs of each task.")] = 1,
    concurrency: Annotated[int, typer.Option(help="Browser contexts in flight.")] = 2,
    artifacts: Annotated[Path, typer.Option(help="Artifact folder.")] = ARTIFACTS_DIR,
    allow_truncated: Annotated[
        bool,
        typer.Option(
            "--allow-truncated",
            help="Replay the whole records of a truncated recording instead of failing.",
        ),
    ] = False,
) -> None:
    """Run an agent on tasks replayed from recordings, offline: every request is answered
    from the WARC (tagged exact, fuzzy, search, blocked or miss in each run's replay.jsonl),
    nothing reaches the network. Prints how each run scored, then the coverage report: the
    pages and calls the recordings did not hold, the to-do list for the next recording. A
    run that failed on a page the recording lacks is excluded as `replay_gap`. A suite file
    (suites/regression/harbor-replayed.yaml) is read as the suites are. A recording that is
    missing, empty, truncated or not WARC fails the command (exit 2) before any run; a
    recorded response that cannot be served (over the 50 MB payload limit, a revisit whose
    original is absent) is named, and answered as a miss."""
    from newsbench_dagster.core.artifacts import LocalArtifactStore
    from newsbench_dagster.core.harness.build import build_runner
    from newsbench_dagster.core.replay.matching import coverage
    from newsbench_dagster.core.web.network import World

    built = agent(agent_manifest, code=2)
    todo = read_tasks(tasks_file)
    for i, t in enumerate(todo):
        if not isinstance(t, dict):
            fail(f"{tasks_file}: task {i} is not an object", 2)
        if not t.get("id"):
            fail(
                f"{tasks_file}: task {i} has no id (a suite file gets its tasks' ids and "
                "defaults when it sits in a suite directory: suites/regression/, ...)",
                2,
            )
        if recording is not None or rules or allow_truncated:
            spec = dict(t.get("replay") or {})
            if recording is not None:
                spec["recording"] = str(recording.resolve())
            if rules:
                spec["rules"] = [*spec.get("rules", []), *(str(r.resolve()) for r in rules)]
            if allow_truncated:
                spec["allow_truncated"] = True
            t["replay"] = spec
        if not t.get("replay"):
            fail(f"{tasks_file}: task {t.get('id', i)} names no recording (use --recording)", 2)
    if not todo:
        fail(f"{tasks_file}: no tasks", 2)
    settings = run_settings(trials=trials, concurrency=concurrency)
    _open_recordings(todo, settings.base_dir)
    runner = build_runner(
        [built],
        world=World.offline(),
        store=LocalArtifactStore(artifacts),
        settings=settings,
    )
    label = f"{built.manifest.agent_version} (replay)"
    rows, scores = run_scored(runner, todo, today(), label, trials)
    table = Table("task", "intent", "result", "class", "exact", "fuzzy", "search", "miss")
    logs: dict[str, list[dict]] = {}
    for row in rows:
        score = scores[row["run_id"]]
        replay = row.get("replay") or {}
        counts = (replay.get("coverage") or {}).get("counts") or {}
        logs.setdefault(replay.get("recording") or "?", []).extend(replay.get("log") or [])
        table.add_row(
            row["task_id"],
            row["intent"] or "",
            verdict_of(score),
            score["failure_class"] or "",
            *(str(counts.get(k, 0)) for k in ("exact", "fuzzy", "search", "miss")),
        )
    console.print(table)
    for path, log in logs.items():
        cov = coverage(log)
        tags = ", ".join(f"{k} {v}" for k, v in sorted(cov["counts"].items()))
        console.print(f"coverage of {path}: {tags or 'no requests'}", markup=False)
        for url in cov["missing_pages"]:
            console.print(f"  missing page: {url}", markup=False)
        for url in cov["missing_calls"]:
            console.print(f"  missing call: {url}", markup=False)
    print_passed(scores, "environment, replay gaps included")
