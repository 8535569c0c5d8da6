"""Recordings: `newsbench record` (pages, tasks' pages, and what an agent loads solving them,
into a WARC 1.1 file) and `newsbench recording audit|index|merge`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from newsbench_dagster.cli.common import (
    DEFAULT_PORT,
    AtOption,
    agent,
    allowlist,
    console,
    day_of,
    err,
    fail,
    instant,
    progress,
    read_tasks,
    run_settings,
    running_newsroom,
)

app = typer.Typer(help="Recordings (WARC 1.1): audit and index them.", no_args_is_help=True)


def _task_pages(tasks: list[dict]) -> list[str]:
    """The pages a task set needs recorded: entry pages and the harness's absolute probes."""
    pages: list[str] = []
    for t in tasks:
        pages.append(t["entry_url"])
        for probe in (t.get("oracle") or {}).get("probes") or []:
            if str(probe.get("url", "")).startswith(("http://", "https://")):
                pages.append(probe["url"])
    return list(dict.fromkeys(pages))


def _record_agent_runs(built, todo: list[dict], world, registry, pages, out, day) -> None:
    """Run the agent live on the tasks, recording what its runs load; merge that into the
    recording of the task pages (which wins) at `out`."""
    import tempfile

    from newsbench_dagster.core.artifacts import LocalArtifactStore
    from newsbench_dagster.core.harness.build import build_runner
    from newsbench_dagster.core.harness.runner import run_tasks
    from newsbench_dagster.core.replay.merge import merge
    from newsbench_dagster.core.replay.recorder import WarcRecorder

    runs_file = out.with_name(out.name + ".runs.tmp")
    recorder = WarcRecorder(runs_file, {"agent": built.manifest.agent_version})
    try:
        with tempfile.TemporaryDirectory() as tmp:
            runner = build_runner(
                [built],
                world=world,
                store=LocalArtifactStore(tmp),
                registry=registry,
                settings=run_settings(artifacts=(), record=recorder),
            )
            with progress() as bar:
                job = bar.add_task(f"recording {built.manifest.agent_version}", total=len(todo))
                rows = run_tasks(todo, day, runner, lambda _: bar.advance(job))
    finally:
        recorder.close()
    answered = sum(r["run_status"] == "answered" for r in rows)
    err.print(f"{built.manifest.agent_version}: {answered}/{len(rows)} live runs answered")
    report = merge(pages, runs_file, out)
    err.print(
        f"merged: {report.kept} exchanges of the task pages, {report.added} added from the "
        f"agent's runs, {report.duplicates} duplicate(s) dropped",
        markup=False,
    )
    pages.unlink()
    runs_file.unlink()


def record(
    urls: Annotated[list[str], typer.Argument(help="Start URLs, loaded in order.")] = [],  # noqa: B006
    out: Annotated[Path, typer.Option(help="The WARC file to write (.warc.gz).")] = Path(
        "recording.warc.gz"
    ),
    site: Annotated[
        list[str], typer.Option(help="Record today's tasks of this site (repeatable).")
    ] = [],  # noqa: B006
    intent: Annotated[list[str], typer.Option(help="With --site: only this intent.")] = [],  # noqa: B006
    tasks: Annotated[int, typer.Option(help="With --site: at most this many tasks per site.")] = 4,
    tasks_from: Annotated[
        Path | None, typer.Option(help="Record the pages of these tasks (JSON or JSON lines).")
    ] = None,
    tasks_out: Annotated[
        Path | None,
        typer.Option(help="Write the recorded tasks here (JSON lines), replaying from --out."),
    ] = None,
    agent_manifest: Annotated[
        Path | None,
        typer.Option(
            "--agent", help="Also run this agent live on the tasks and record all it loads."
        ),
    ] = None,
    browse: Annotated[
        bool, typer.Option(help="Open a visible window and record until you close it.")
    ] = False,
    port: Annotated[int, typer.Option(help="Newsroom port (for *.test sites).")] = DEFAULT_PORT,
    settle_ms: Annotated[int, typer.Option(help="Wait after each load, ms.")] = 500,
    at: AtOption = None,
) -> None:
    """Record pages into a WARC 1.1 file: every request Chromium makes and its response, each
    site's robots.txt and 404 page, a page timeline and the recording clock. Cookies,
    authorization headers and credentials are stripped before writing; the recording is
    then audited, and the command fails (exit 1) when a secret or a bot-check page remains.

    Pages come from URLs, from today's tasks of --site, or from a task file (--tasks-from);
    with --tasks-out the tasks are written back naming the recording, ready for
    `newsbench replay run`. With --agent, the agent also runs the tasks live and every page
    and call its runs make is recorded (merged in, the task pages winning), so the replay
    holds what the agent needs. --browse opens a window and records what you browse. With
    --at the newsroom is frozen at that instant: its pages and tasks are that instant's."""
    import asyncio

    from newsbench_dagster.core.harness.browser import BrowserOptions
    from newsbench_dagster.core.replay.audit import audit
    from newsbench_dagster.core.replay.recorder import record as record_pages

    registry = allowlist(site, intent)
    # A bad manifest is refused before anything is recorded, not after.
    built = agent(agent_manifest, code=2) if agent_manifest else None
    todo: list[dict] = read_tasks(tasks_from) if tasks_from else []
    frozen = instant(at)
    day = day_of(frozen)
    with running_newsroom(port, frozen) as world:
        if site:
            from newsbench_dagster.core.tasks.intents import ALL_INTENTS
            from newsbench_dagster.core.tasks.produce import todays_tasks
            from newsbench_dagster.core.web.network import Fetcher

            with Fetcher(world.routing, registry.allowed_origins) as fetcher:
                for key in site:
                    made = todays_tasks(registry, fetcher, day, [key], tuple(intent) or ALL_INTENTS)
                    todo += made[:tasks]
        try:
            pages = list(dict.fromkeys([*urls, *_task_pages(todo)]))
        except (KeyError, TypeError) as e:
            fail(f"{tasks_from}: a task without entry_url ({e})", 2)
        if not pages and not browse:
            fail("nothing to record: give URLs, --site, --tasks-from or --browse", 2)
        options = BrowserOptions(routing=world.routing, headless=not browse)
        pages_file = out.with_name(out.name + ".pages.tmp") if agent_manifest else out
        summary = asyncio.run(
            record_pages(pages, pages_file, options, settle_ms=settle_ms, until_closed=browse)
        )
        if agent_manifest:
            if not todo:
                fail("--agent needs tasks: give --site or --tasks-from", 2)
            _record_agent_runs(built, todo, world, registry, pages_file, out, day)
    err.print(
        f"{out}: {summary.exchanges} exchanges from {len(summary.pages)}/{len(pages)} pages; "
        f"stripped {summary.stripped_headers} secret headers, "
        f"redacted {summary.redacted_params} credential values",
        markup=False,
    )
    for failure in summary.failures:
        err.print(f"not recorded: {failure['url']}: {failure['error']}", markup=False)
    if tasks_out and todo:
        with open(tasks_out, "w", encoding="utf-8") as f:
            for t in todo:
                f.write(json.dumps({**t, "replay": {"recording": str(out.resolve())}}) + "\n")
        err.print(f"{tasks_out}: {len(todo)} task(s) replaying from {out}", markup=False)
    findings = audit(out)
    for finding in findings:
        err.print(f"audit: {finding}", markup=False)
    if findings or not (summary.pages or browse):
        raise typer.Exit(1)


AllowTruncated = Annotated[
    bool,
    typer.Option(
        "--allow-truncated",
        help="A truncated WARC: keep its whole records (with a warning) instead of failing.",
    ),
]


def _check(path: Path, allow_truncated: bool) -> None:
    """Refuse (exit 2, one line naming the file and where it broke) a recording that is
    missing, empty, not WARC or truncated; with --allow-truncated, warn and go on."""
    from newsbench_dagster.core.replay.warc import WarcError, check_warc

    try:
        integrity = check_warc(path)
    except OSError as e:
        fail(f"{path}: cannot read: {e.strerror or e}", 2)
    except WarcError as e:
        fail(str(e), 2)
    if not integrity.whole:
        if not allow_truncated:
            fail(f"{integrity.problem} (--allow-truncated keeps the whole records)", 2)
        err.print(
            f"warning: {integrity.problem}; with --allow-truncated the {integrity.records} "
            "whole record(s) are kept, the rest is not read",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


@app.command("audit")
def recording_audit(
    path: Annotated[Path, typer.Argument(help="A WARC file.")],
    allow_truncated: AllowTruncated = False,
) -> None:
    """Fail (exit 1) when a recording still holds a cookie, an authorization header or a
    credential, a page is a bot-check / CAPTCHA page, a record's payload decodes beyond the
    50 MB limit or a revisit's original is absent; each finding names its record. A file
    that is empty, truncated or not WARC fails with exit 2."""
    from newsbench_dagster.core.replay.audit import audit

    _check(path, allow_truncated)
    try:
        findings = audit(path, allow_truncated=allow_truncated)
    except (OSError, ValueError) as e:
        fail(f"{path}: unreadable as WARC: {e}", 2)
    for finding in findings:
        console.print(str(finding), markup=False, highlight=False, soft_wrap=True)
    if findings:
        err.print(f"{path}: {len(findings)} finding(s); the recording fails the audit")
        raise typer.Exit(1)
    err.print(f"{path}: clean")


@app.command("index")
def recording_index(
    path: Annotated[Path, typer.Argument(help="A WARC file.")],
    allow_truncated: AllowTruncated = False,
) -> None:
    """One JSON line per record: type, URL, date, status, offset and length in the file. A
    file that is empty, truncated or not WARC fails with exit 2."""
    from newsbench_dagster.core.replay.audit import index

    _check(path, allow_truncated)
    try:
        entries = index(path, allow_truncated=allow_truncated)
    except (OSError, ValueError) as e:
        fail(f"{path}: unreadable as WARC: {e}", 2)
    for entry in entries:
        print(json.dumps(entry))


@app.command("merge")
def recording_merge(
    first: Annotated[Path, typer.Argument(help="A recording session (WARC).")],
    second: Annotated[Path, typer.Argument(help="Another session of the same task.")],
    out: Annotated[Path, typer.Option(help="The merged WARC to write.")],
) -> None:
    """Merge two recording sessions of the same task: the earlier session (by recording
    clock) wins every request both hold; the later one adds what the earlier never asked
    for. Prints what was kept, added and overridden, and which overridden pages changed."""
    from newsbench_dagster.core.replay.audit import audit
    from newsbench_dagster.core.replay.merge import merge

    try:
        report = merge(first, second, out)
    except (OSError, ValueError) as e:
        fail(f"cannot merge: {e}", 2)
    err.print(
        f"{out}: {report.kept} exchanges from {report.earlier} (earlier, wins), "
        f"{report.added} added from {report.later}, {report.duplicates} duplicate(s) "
        "dropped in favour of the earlier copy",
        markup=False,
        highlight=False,
    )
    for url in report.changed:
        err.print(f"changed between sessions (earlier kept): {url}", markup=False)
    findings = audit(out)
    for finding in findings:
        err.print(f"audit: {finding}", markup=False)
    if findings:
        raise typer.Exit(1)
