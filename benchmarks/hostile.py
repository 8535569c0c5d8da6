"""Hostile inputs through the real CLI: each input is built in a temp dir (bombs served on
loopback where the command reads a URL), the command runs in a child process, and the table
says what the user saw (exit status, the first line of the message) and what it cost (the
child's own peak RSS, from wait4 in a small launcher, and seconds). Every input must stay
within 1 GB and 60 s; the script exits 1 when one does not.

A regression must not take the machine down: every child runs under RLIMIT_AS (3 GB), except
the commands that start Chromium (`replay run`), whose V8 reserves far more address space than
it uses; those are watched instead and killed, with their whole process tree, past 3 GB of
resident memory.

    uv run python benchmarks/hostile.py            # ~1 min: the bombs at full size
    uv run python benchmarks/hostile.py --smoke    # seconds: small bombs, no browser runs
    uv run python benchmarks/hostile.py --markdown # the table as Markdown (the README's)

The last line printed is `hostile inputs: N, over the limits: K (...)`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
from common import parse_args

from tests.support.bombs import alias_bomb, entity_bomb, gzip_bomb, serving_gzipped
from tests.support.warcs import page, write_warc

ROOT = Path(__file__).resolve().parent.parent
NEWSBENCH = Path(sys.executable).with_name("newsbench")
PEAK_RSS = ROOT / "tests" / "support" / "peak_rss.py"
RECORDING = ROOT / "recordings" / "harbor-2026-12-01.warc.gz"
SUITE = ROOT / "suites" / "regression" / "harbor-replayed.yaml"
GUARD_BYTES = 3 * 1024**3
LIMIT_MB, LIMIT_S = 1024, 60.0
MB = 1024 * 1024
GZIPPED = [("Content-Encoding", "gzip")]


@dataclass
class Case:
    name: str  # the input
    args: list[str]  # the newsbench command
    browser: bool = False  # starts Chromium: watched, not RLIMIT_AS-capped


@dataclass
class Outcome:
    case: Case
    code: int
    message: str
    peak_mb: float
    seconds: float

    @property
    def over(self) -> bool:
        return self.peak_mb > LIMIT_MB or self.seconds > LIMIT_S


# -- building the inputs -----------------------------------------------------------------------
def replay_task(tmp: Path) -> Path:
    """One task of the replay-backed suite (harbor's front page), as a JSON task file."""
    from newsbench_dagster.core.tasks.suites import load_suite_file
    from newsbench_dagster.core.web.sites import load_sites
    from newsbench_dagster.paths import SITES_FILE

    sites = load_sites(SITES_FILE)
    task = load_suite_file(SUITE, sites.allowed_origins, sites.keys).tasks[0].task
    out = tmp / "front-page-task.json"
    out.write_text(json.dumps(task), encoding="utf-8")
    return out


def cases(tmp: Path, url: str, smoke: bool) -> list[Case]:
    def write(name: str, data: bytes) -> str:
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return str(path)

    suites = tmp / "suites"
    write("suites/regression/bomb.yaml", alias_bomb(10))
    nested = write("nested/tasks.json", b"[" * 100_000 + b"]" * 100_000)
    latin = tmp / "latin-suites"
    write("latin-suites/regression/latin.yaml", b"site: harbor\nreason: caf\xe9 au lait\n")
    entity = write("entity-bomb.xml", entity_bomb(1_000 if smoke else 10_000))
    warc = tmp / "gzip-bomb.warc.gz"
    body = gzip_bomb(60 if smoke else 1200, b"<!doctype html><html><body><main><h1>")
    front = page("http://harbor-herald.test/", body, "text/html; charset=utf-8", GZIPPED)
    write_warc(warc, [front])
    empty = write("empty.warc.gz", b"")
    whole = RECORDING.read_bytes()
    truncated = write("truncated.warc.gz", whole[: len(whole) // 2])
    task = str(replay_task(tmp))
    size = f"{warc.stat().st_size / 1024:.1f} KB"
    out = [
        Case("gzip-bomb feed (served)", ["feeds", "inspect", f"{url}/feed.xml"]),
        Case("gzip-bomb page (served)", ["inspect", f"{url}/page.html"]),
        Case("XML entity bomb feed", ["feeds", "inspect", entity]),
        Case("YAML alias bomb suite", ["tasks", "validate", "--root", str(suites)]),
        Case("nested JSON task file", ["replay", "run", nested]),
        Case("non-UTF-8 suite file", ["tasks", "validate", "--root", str(latin)]),
        Case(f"gzip-bomb WARC ({size})", ["recording", "audit", str(warc)]),
        Case("empty WARC", ["recording", "audit", empty]),
        Case("truncated WARC", ["recording", "audit", truncated]),
        Case("truncated WARC", ["recording", "index", truncated]),
    ]
    if not smoke:  # Chromium: seconds each
        artifacts = str(tmp / "artifacts")
        replay = ["replay", "run", task, "--artifacts", artifacts, "--recording"]
        out += [
            Case(f"gzip-bomb WARC ({size})", [*replay, str(warc)], browser=True),
            Case("empty WARC", [*replay, empty], browser=True),
            Case("truncated WARC", [*replay, truncated], browser=True),
        ]
    return out


# -- running one -------------------------------------------------------------------------------
def _watch(proc: subprocess.Popen, stop: threading.Event, why: list[str]) -> None:
    """Kill `proc` and everything under it once their resident memory passes the guard."""
    try:
        top = psutil.Process(proc.pid)
    except psutil.NoSuchProcess:
        return
    while not stop.wait(0.1):
        try:
            tree = [top, *top.children(recursive=True)]
            rss = sum(p.memory_info().rss for p in tree)
        except psutil.NoSuchProcess:
            continue
        if rss > GUARD_BYTES:
            why.append(f"KILLED at {rss / MB:.0f} MB resident (the 3 GB guard)")
            for p in tree:
                with contextlib.suppress(psutil.NoSuchProcess):
                    p.kill()
            return


def _message(code: int, stdout: str, stderr: str) -> str:
    """What the user was told: the error line, else the exception a traceback ended in, else
    (a failure) the first problem printed, else the first line of stderr."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    said = [line for line in lines if line.startswith("error:")]
    if said:
        return said[0]
    if any("Traceback" in line for line in lines):
        last = [line for line in lines if not line.startswith(("│", "╰", "╭"))]
        return "TRACEBACK: " + (last[-1] if last else "?")
    printed = [line.strip() for line in stdout.splitlines() if line.strip()]
    if code != 0 and printed:
        return printed[0]
    return lines[0] if lines else ""


def run(case: Case, timeout: float) -> Outcome:
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile("r") as peak,
    ):
        started = time.perf_counter()
        # Through peak_rss.py: forked from this process (which built the inputs), the child's
        # peak RSS would start at ours. Chromium is not capped (it reserves address space).
        cap = 0 if case.browser else GUARD_BYTES
        launcher = [sys.executable, str(PEAK_RSS), peak.name, str(cap), "--"]
        proc = subprocess.Popen(
            [*launcher, str(NEWSBENCH), *case.args],
            stdout=out,
            stderr=err,
            start_new_session=True,
            cwd=ROOT,
        )
        stop, why = threading.Event(), []
        watcher = threading.Thread(target=_watch, args=(proc, stop, why), daemon=True)
        watcher.start()

        def expire() -> None:
            why.append(f"KILLED after the {timeout:.0f} s timeout")
            os.killpg(proc.pid, 9)

        timer = threading.Timer(timeout, expire)
        timer.start()
        try:
            proc.wait()
        finally:
            timer.cancel()
            stop.set()
        seconds = time.perf_counter() - started
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)  # anything it left behind
        out.seek(0)
        err.seek(0)
        stdout = out.read(1 << 20).decode("utf-8", "replace")
        stderr = err.read(1 << 20).decode("utf-8", "replace")
        kib = peak.read().strip()
    code = proc.returncode
    message = why[0] if why else _message(code, stdout, stderr)
    return Outcome(case, code, message, int(kib or 0) / 1024, seconds)


# -- the table -----------------------------------------------------------------------------------
def table(outcomes: list[Outcome], markdown: bool, tmp: str) -> str:
    rows = [
        (
            o.case.name,
            "newsbench " + " ".join(_short(a) for a in o.case.args),
            str(o.code),
            _unrooted(o.message, tmp)[:150],
            f"{o.peak_mb:.0f}",
            f"{o.seconds:.1f}",
            "OVER" if o.over else "ok",
        )
        for o in outcomes
    ]
    head = ("input", "command", "exit", "message (first line)", "peak MB", "s", "limits")
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [head, *rows]]
    return "\n".join(line.rstrip() for line in lines)


def _unrooted(message: str, tmp: str) -> str:
    """A message with the temp dir's path and the loopback server's port left out."""
    message = message.replace(tmp + "/", "")
    return re.sub(r"http://127\.0\.0\.1:\d+/", "http://127.0.0.1:PORT/", message)


def _short(arg: str) -> str:
    """Temp paths and loopback URLs by their last part, so the table reads the same each run."""
    if arg.startswith(("/", "http://127.0.0.1")):
        return "…/" + arg.rstrip("/").rsplit("/", 1)[-1]
    return arg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bomb-mb", type=int, default=1200, help="inflated size of the gzip bombs")
    ap.add_argument("--timeout", type=float, default=180.0, help="kill a child after this")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parse_args(ap, bomb_mb=60, timeout=60.0)
    bodies = {
        "/feed.xml": ("application/rss+xml", gzip_bomb(args.bomb_mb, b"<rss><channel><title>")),
        "/page.html": ("text/html", gzip_bomb(args.bomb_mb, b"<!doctype html><html><body><p>")),
    }
    with tempfile.TemporaryDirectory() as tmp, serving_gzipped(bodies) as url:
        outcomes = [run(case, args.timeout) for case in cases(Path(tmp), url, args.smoke)]
    print(table(outcomes, args.markdown, tmp))
    over = [o for o in outcomes if o.over]
    worst_mb = max(o.peak_mb for o in outcomes)
    worst_s = max(o.seconds for o in outcomes)
    print(
        f"hostile inputs: {len(outcomes)}, over the limits: {len(over)} "
        f"(peak {worst_mb:.0f} MB, slowest {worst_s:.1f} s; limits {LIMIT_MB} MB, {LIMIT_S:.0f} s)"
    )
    if over:
        sys.exit(1)


if __name__ == "__main__":
    main()
