"""What every command shares: the consoles, errors that name the offending input and exit,
the progress bar, instants and days, reading a file or URL, the allowlist check, manifests and
task files, and the newsroom a command runs against."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Column

from newsbench_dagster.paths import PROJECT_ROOT, SITES_FILE

# Tables stay readable when piped (rich would wrap them at 80 columns).
console = Console(width=None if sys.stdout.isatty() else 140)
# Errors are never hard-wrapped: a path or URL broken over two lines cannot be copied.
err = Console(stderr=True, soft_wrap=True)
DEFAULT_PORT = 8411

# Where URLs are fetched from: the same choice for every command that reads one.
ProxyOption = Annotated[
    str | None,
    typer.Option(
        help="HTTP proxy for URLs; *.test URLs default to the newsroom on "
        f"127.0.0.1:{DEFAULT_PORT}."
    ),
]
PortOption = Annotated[int, typer.Option(help="Newsroom port.")]


def fail(message: str, code: int = 1) -> NoReturn:
    # One line however long (a path, a URL): rich would wrap it at 80 columns when piped.
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def progress(on: Console | None = None) -> Progress:
    """The one progress bar of every long command: what, how far, how long. On a terminal a
    live bar whose description wraps rather than being cut; elsewhere (a pipe, a log file,
    CI) plain lines, which rich's bar is not: it is drawn there once, at the end, cut to
    80 columns."""
    on = on or err
    if not on.is_terminal:
        return LineProgress(on)
    return Progress(
        TextColumn("{task.description}", table_column=Column(overflow="fold", ratio=1)),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=on,
    )


class LineProgress(Progress):
    """The progress bar as log lines, for output that is not a terminal: `WHAT: N/TOTAL
    (Ss)` when a step ends, at most every `every` seconds (the first and the last always),
    never cut or wrapped."""

    def __init__(self, on: Console, every: float = 2.0) -> None:
        super().__init__(console=on, disable=True)
        self.every = every
        self._last: dict[TaskID, float] = {}

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._say(task_id)

    def update(self, task_id: TaskID, **changes) -> None:
        super().update(task_id, **changes)
        if changes.get("advance") or changes.get("completed") is not None:
            self._say(task_id)

    def _say(self, task_id: TaskID) -> None:
        task = next(t for t in self.tasks if t.id == task_id)
        now = time.monotonic()
        last = self._last.get(task_id)
        done = task.total is not None and task.completed >= task.total
        if last is not None and now - last < self.every and not done:
            return
        self._last[task_id] = now
        total = f"/{task.total:.0f}" if task.total is not None else ""
        self.console.print(
            f"{task.description}: {task.completed:.0f}{total} ({task.elapsed or 0:.0f}s)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def today() -> date:
    return datetime.now(UTC).date()


def day_of(at: datetime | None) -> date:
    """The UTC day of an instant (today without one)."""
    return at.astimezone(UTC).date() if at is not None else today()


# `--at` of the commands that run tasks: the newsroom frozen at an instant.
AtOption = Annotated[
    str | None,
    typer.Option(
        "--at",
        help="Freeze the newsroom at this ISO instant (UTC unless it says otherwise) to "
        "reproduce the runs of any hour; the day defaults to its date.",
    ),
]


def day_arg(text: str, option: str = "--day") -> date:
    """A day an option names (YYYY-MM-DD); exit 2 naming the option and the text."""
    try:
        return date.fromisoformat(text)
    except ValueError as e:
        fail(f"{option} {text!r} is not a day (YYYY-MM-DD): {e}", 2)


def past_or_today(day: date, option: str = "--day") -> date:
    """`day`, refused (exit 2) when it is after today (UTC): there is nothing to evaluate
    yet, and the day partitions end today."""
    if day > today():
        fail(f"{option} {day} is in the future (today is {today()}, UTC)", 2)
    return day


def instant(text: str | None, option: str = "--at") -> datetime | None:
    if text is None:
        return None
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        fail(f"{option} {text!r} is not an ISO 8601 instant (e.g. 2026-11-30T15:00:00Z)", 2)
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def shown(path: Path) -> Path:
    """Relative to the working directory when under it: problems name files people open."""
    try:
        return path.resolve().relative_to(Path.cwd())
    except ValueError:
        return path


def registry(sites: Path | None = None):
    """The site allowlist (default: the project's sites.yaml); exit 1 naming a bad file."""
    from newsbench_dagster.core.errors import ConfigError
    from newsbench_dagster.core.web.sites import load_sites

    try:
        return load_sites(sites or SITES_FILE)
    except ConfigError as e:
        fail(str(e))


def allowlist(sites: list[str], intents: list[str]):
    """The allowlist, with the sites and intents a command was given checked against it
    (exit 2 naming the unknown ones)."""
    from newsbench_dagster.core.tasks.intents import unknown_intents

    if problem := unknown_intents(intents):
        fail(problem, 2)
    found = registry()
    if bad := [s for s in sites if s not in found.keys]:
        fail(f"unknown site(s) {', '.join(bad)}; the allowlist has: {', '.join(found.keys)}", 2)
    return found


def agent(path: Path, code: int = 1):
    """The agent a manifest file describes, built; exit `code` naming a bad manifest."""
    from newsbench_dagster.core.agents.protocol import build_agent, load_manifest
    from newsbench_dagster.core.errors import ConfigError

    try:
        return build_agent(load_manifest(path))
    except ConfigError as e:
        fail(str(e), code)


def resolve_manifest(spec: str, directory: Path):
    """A manifest by path, agent version (name@version+hash), name@version or name."""
    from newsbench_dagster.core.agents.protocol import load_manifest, scan_manifests
    from newsbench_dagster.core.errors import ConfigError

    try:
        if spec.endswith((".yaml", ".yml")) or Path(spec).is_file():
            return load_manifest(spec)
        scan = scan_manifests(directory)  # the others' broken manifests are not in the way
        found = [
            m for m in scan.manifests if spec in (m.agent_version, m.name, f"{m.name}@{m.version}")
        ]
    except (ConfigError, OSError) as e:
        fail(str(e), 2)
    if len(found) != 1:
        what = "no" if not found else f"{len(found)}"
        broken = f" (broken, skipped: {scan.broken_files()})" if scan.broken else ""
        fail(f"{what} manifest in {directory} matches {spec!r}{broken}", 2)
    return found[0]


def _not_text(data: bytes) -> str | None:
    """What a task file's bytes are when they are not text: a recording (given where tasks
    were expected), compressed or other binary data."""
    import zlib

    head = data[:4096]
    if head.startswith(b"\x1f\x8b"):
        try:
            inner = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 64)
        except zlib.error:
            inner = b""
        if inner.startswith(b"WARC/"):
            return "a WARC recording (gzipped), not tasks; a recording is given with --recording"
        return "gzip-compressed data, not tasks"
    if head.startswith(b"WARC/"):
        return "a WARC recording, not tasks; a recording is given with --recording"
    if b"\x00" in head:
        return "binary data, not tasks"
    return None


def read_tasks(path: Path) -> list[dict]:
    """Tasks from a file: a JSON list, one JSON object, JSON lines, or YAML (a task or a
    list). A file in a suite directory (`suites/regression/x.yaml`) is loaded as the suites
    are, ids and defaults filled. Exit 2 naming the file and what is wrong with it."""
    from newsbench_dagster.core.errors import InputFileError
    from newsbench_dagster.core.input_files import (
        MAX_FILE_BYTES,
        decode_utf8,
        load_json,
        load_yaml,
    )
    from newsbench_dagster.core.tasks.suites import suite_of

    try:
        if (size := path.stat().st_size) > MAX_FILE_BYTES:
            fail(f"{path}: {size} bytes, over the {MAX_FILE_BYTES} byte limit of a task file", 2)
        data = path.read_bytes()
    except OSError as e:
        fail(f"{path}: cannot read: {e.strerror or e}", 2)
    if what := _not_text(data):
        fail(f"{path}: {what}", 2)
    try:
        text = decode_utf8(data, path)
        if suite_of(path):
            return _suite_tasks(path)
        if path.suffix in (".yaml", ".yml"):
            return _yaml_tasks(load_yaml(text, path))
        try:
            found = load_json(text, path)
            return found if isinstance(found, list) else [found]
        except InputFileError as e:
            if not e.problem.startswith("not valid JSON"):
                raise
        tasks = []  # JSON lines
        for n, line in enumerate(text.splitlines(), 1):
            try:
                tasks += [load_json(line, path)] if line.strip() else []
            except InputFileError as e:
                raise InputFileError(path, e.problem, n) from e
        return tasks
    except InputFileError as e:
        fail(f"{e}, so not a task file" if e.problem.startswith("not UTF-8") else str(e), 2)


def _yaml_tasks(found) -> list:
    if found is None:
        return []
    # YAML reads an unquoted 2026-12-01 as a date; tasks carry ISO strings.
    return json.loads(json.dumps(found if isinstance(found, list) else [found], default=str))


def _suite_tasks(path: Path) -> list[dict]:
    """A suite file's tasks as the suites load them; its problems named, exit 2."""
    from newsbench_dagster.core.tasks.suites import load_suite_file

    sites = registry()
    load = load_suite_file(shown(path), sites.allowed_origins, sites.keys)
    *before, last = load.problems or [None]
    for problem in before:
        err.print(f"[bold red]error:[/] {problem}", highlight=False, soft_wrap=True)
    if last is not None:
        fail(str(last), 2)
    return [t.task for t in load.tasks]


@contextmanager
def running_newsroom(port: int, at: datetime | None = None) -> Iterator:
    """The newsroom for the duration of a command, as the runs' world: reused if one runs on
    `port`, else started here (and stopped at the end); with `at`, frozen at that instant."""
    from newsbench_dagster.newsroom.launcher import (
        NewsroomUnavailable,
        ensure_newsroom,
        newsroom_world,
    )
    from newsbench_dagster.newsroom.world import DEFAULT_SEED

    try:
        server, health = ensure_newsroom(port, DEFAULT_SEED, at)
    except NewsroomUnavailable as e:
        fail(str(e), 2)
    frozen = health.get("frozen_at")
    err.print(
        f"newsroom {'started' if server else 'already running'} on 127.0.0.1:{port} "
        f"(revision {health.get('revision')}, "
        f"{'clock frozen at ' + frozen if frozen else 'real time'})"
    )
    try:
        yield newsroom_world(port, health)
    finally:
        if server is not None:
            server.stop()


def run_settings(**overrides):
    """Run settings for a command's runs: tasks' relative files (recordings, grading) are the
    project's, as in the pipeline."""
    from newsbench_dagster.core.harness.settings import RunSettings

    return RunSettings(**{"base_dir": str(PROJECT_ROOT), **overrides})


def run_scored(runner, todo: list[dict], day: date, label: str, trials: int):
    """Run the tasks with a progress bar, scoring each run as it ends; its judgement is kept
    beside its run.json (`judgement.json`)."""
    from newsbench_dagster.core.harness.runner import run_tasks
    from newsbench_dagster.core.scoring.judgement import keep
    from newsbench_dagster.core.scoring.score import score_safely

    by_id = {t.get("id"): t for t in todo}
    scores: dict[str, dict] = {}
    base_dir = runner.settings.base_dir
    with progress() as bar:
        job = bar.add_task(label, total=len(todo) * trials)

        def advance(row: dict) -> None:
            score = scores[row["run_id"]] = score_safely(
                row, by_id.get(row["task_id"]), base_dir=base_dir
            )
            keep(runner.store, row, score)  # beside run.json: what was judged, and why
            bar.advance(job)

        rows = run_tasks(todo, day, runner, advance)
    return rows, scores


def verdict_of(score: dict) -> str:
    from newsbench_dagster.core.scoring.judgement import verdict

    return verdict(score)


def print_passed(
    scores: dict[str, dict],
    excluded_means: str = "environment",
    rows: list[dict] | None = None,
) -> bool:
    """The summary line of a batch; the harness's own errors (a request it built wrong) in
    red, one line each; and, loudly, a batch in which no run was scored at all, with why.
    Returns whether any run was scored."""
    from collections import Counter

    from rich.markup import escape  # an error's text is shown as is: "[redacted:KEY]" too

    scored = [s for s in scores.values() if not s["excluded"]]
    excluded = [s for s in scores.values() if s["excluded"]]
    why = Counter(s["exclusion_reason"] or s["failure_class"] or "?" for s in excluded)
    reasons = ", ".join(f"{k} {n}" for k, n in why.most_common())
    for row in rows or []:
        if row.get("env_failure") == "harness_error":
            err.print(
                f"[bold red]harness error[/] in {row['run_id']}: {escape(str(row.get('error')))}"
            )
    if excluded and not scored:
        first = next((r.get("error") for r in rows or [] if r.get("error")), None)
        err.print(
            f"[bold red]no run was scored: all {len(excluded)} excluded[/] ({reasons})"
            + (f"; first error: {escape(first)}" if first else "")
        )
        return False
    err.print(
        f"{sum(bool(s['success']) for s in scored)}/{len(scored)} scored runs passed; "
        f"{len(excluded)} excluded ({excluded_means}{': ' + reasons if reasons else ''})"
    )
    return bool(scored)


class StepLog:
    """A long command's progress in a file, one line per step with its outcome and time, so
    it can be followed (`tail -f`) and read after a crash, not only on a terminal."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def line(self, text: str) -> None:
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        with self.path.open("a", encoding="utf-8") as f:
            f.write(f"{stamp} {text}\n")

    @contextmanager
    def step(self, what: str):
        started = time.monotonic()
        self.line(f"start {what}")
        outcome: list = []
        try:
            yield lambda success, run_id: outcome.extend([success, run_id])
        except BaseException as e:
            self.line(f"crash {what}: {type(e).__name__}: {e}")
            raise
        seconds = time.monotonic() - started
        success, run_id = outcome or (False, None)
        self.line(f"{'ok' if success else 'FAILED'} {what} in {seconds:.1f}s (run {run_id})")
