"""Where a command's CPU went, by kind of process, orphans and killed processes included:

    uv run python -m tests.support.cpu_census [--top N] -- uv run pytest -q

`--cpu-report` (tests/support/cpu_report.py) counts what each test's worker reaped; a process
killed with its group, or orphaned (a Dagster daemon's run worker, Chromium under a killed
driver), is never reaped by it and goes uncounted: about a fifth of the suite's CPU. This
census asks the kernel instead: Linux process accounting (acct(2), which needs root or
CAP_SYS_PACCT) writes every process's CPU when it exits. The command runs with this process as
its child subreaper, so orphans stay in its tree; only processes of that tree are counted. A
sampler reads each new process's command line from /proc every 50 ms to name its kind (one
that lived less than that is named by the kernel's 16-character `comm`). Accounting's CPU
times are sampled at the kernel's ticks: close in sum over many processes, rough for one
(a 2 s test burn was counted 1.4 s on a loaded machine).
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
# struct acct_v3 (linux/acct.h): flag, version, tty, exitcode, uid, gid, pid, ppid, btime,
# etime (float), utime, stime, mem, io, rw, minflt, majflt, swaps (comp_t), comm[16].
ACCT_V3 = struct.Struct("<ccHIIIIIIf8H16s")
AHZ = 100  # the comp_t times' clock ticks per second
# Set for the command: accounting is one switch for the whole machine, so a census inside it
# (tests/test_cpu_census.py in a censused suite) would end this one's.
RUNNING = "NEWSBENCH_CPU_CENSUS"
ORPHAN_WAIT_S = 30.0


def comp_t(value: int) -> int:
    """A comp_t: 13-bit mantissa, 3-bit base-8 exponent."""
    return (value & 0x1FFF) << (3 * (value >> 13))


def records(data: bytes) -> list[tuple[int, int, float, str]]:
    """(pid, ppid, CPU seconds, comm) of each acct_v3 record in `data`."""
    out = []
    for offset in range(0, len(data) - ACCT_V3.size + 1, ACCT_V3.size):
        f = ACCT_V3.unpack_from(data, offset)
        if f[1] != b"\x03":
            raise ValueError(f"accounting record at byte {offset} is not version 3: {f[1]!r}")
        cpu = (comp_t(f[10]) + comp_t(f[11])) / AHZ
        out.append((f[6], f[7], cpu, f[18].split(b"\0")[0].decode(errors="replace")))
    return out


def kind(argv: list[str] | None, comm: str) -> str:
    """What a process was, from its command line (or, unsampled, its comm)."""
    if not argv:
        return f"unsampled: {comm}"
    exe = Path(argv[0]).name
    # Chromium starts its zygote and the processes forked from it as /proc/self/exe.
    if "chrom" in exe or (exe == "exe" and any(a.startswith("--type=") for a in argv)):
        return "chromium"
    if exe == "node":
        return "node (Playwright driver)" if "run-driver" in argv else "node"
    if exe.startswith("python"):
        rest = argv[1:]
        while rest and rest[0].startswith("-") and rest[0] not in ("-c", "-m"):
            rest = rest[2:] if rest[0] in ("-X", "-W") else rest[1:]  # the interpreter's flags
        if rest[:1] == ["-c"]:
            code = rest[1] if len(rest) > 1 else ""
            if "sys.stdin.readline" in code:  # how execnet starts an xdist worker
                return "python: pytest worker"
            return "python: multiprocessing child" if "multiprocessing" in code else "python -c"
        if rest[:1] == ["-m"] and len(rest) > 1:
            return f"python -m {rest[1]}"
        script = next((a for a in rest if not a.startswith("-")), "")
        if script.endswith("__main__.py"):  # a console script's package run by path
            return f"python -m {Path(script).parent.name}"
        return f"python {Path(script).name}" if script else "python"
    return exe


class Sampler(threading.Thread):
    """Command lines of the processes alive on the machine, polled until stopped."""

    def __init__(self, every_s: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.every_s, self.argv, self._done = every_s, {}, threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            for entry in os.scandir("/proc"):
                if entry.name.isdigit() and int(entry.name) not in self.argv:
                    try:
                        raw = Path(entry.path, "cmdline").read_bytes()
                    except OSError:
                        continue
                    if raw:
                        self.argv[int(entry.name)] = (
                            raw.rstrip(b"\0").decode(errors="replace").split("\0")
                        )
            self._done.wait(self.every_s)

    def stop(self) -> None:
        self._done.set()
        self.join()


def wait_for_orphans(limit_s: float) -> None:
    """Reap the command's orphans (this process's children now) until none is left or
    `limit_s` has passed; one still running then is left out of the census."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.05)


def census(command: list[str]) -> tuple[int, dict[str, list[float]], float]:
    """Run `command` under process accounting: its exit status, {kind: [CPU of each process]}
    for its tree, and its wall time."""
    if os.environ.get(RUNNING):
        raise PermissionError(f"a census is already running ({RUNNING} is set): one at a time")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    with tempfile.TemporaryDirectory(prefix="cpu-census-") as tmp:
        log = Path(tmp, "pacct")
        log.touch()
        if libc.acct(str(log).encode()) != 0:
            err = ctypes.get_errno()
            raise PermissionError(
                f"process accounting refused ({os.strerror(err)}): acct(2) needs root or "
                "CAP_SYS_PACCT"
            )
        sampler = Sampler()
        sampler.start()
        began = time.monotonic()
        try:
            code = subprocess.call(command, env={**os.environ, RUNNING: "1"})
            wait_for_orphans(ORPHAN_WAIT_S)
        finally:
            wall = time.monotonic() - began
            libc.acct(None)
            sampler.stop()
        data = log.read_bytes()
    done = records(data)
    parent = {pid: ppid for pid, ppid, _, _ in done}
    me = os.getpid()

    def ours(pid: int) -> bool:
        seen = set()
        while pid in parent and pid not in seen:
            seen.add(pid)
            pid = parent[pid]
            if pid == me:
                return True
        return False

    kinds: dict[str, list[float]] = collections.defaultdict(list)
    for pid, _, cpu, comm in done:
        if ours(pid):
            kinds[kind(sampler.argv.get(pid), comm)].append(cpu)
    return code, kinds, wall


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--top", type=int, default=20, help="kinds listed (default 20)")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no command given (put it after --)")
    try:
        code, kinds, wall = census(command)
    except PermissionError as e:
        print(f"cpu_census: {e}", file=sys.stderr)
        return 2
    total = sum(sum(v) for v in kinds.values())
    print(f"\n{total:.0f} s of CPU in {sum(map(len, kinds.values()))} processes, {wall:.0f} s wall")
    print(f"{'CPU s':>8} {'share':>6} {'procs':>6}  kind")
    for name, cpus in sorted(kinds.items(), key=lambda kv: -sum(kv[1]))[: args.top]:
        print(f"{sum(cpus):8.1f} {sum(cpus) / (total or 1):6.1%} {len(cpus):6}  {name}")
    return code


if __name__ == "__main__":
    sys.exit(main())
