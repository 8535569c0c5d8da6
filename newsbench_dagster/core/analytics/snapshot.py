"""The warehouse's read snapshot: what analysts and Newsbench's own readers open, so that no
reader ever stands in a writer's way.

DuckDB lets one process open a database file for writing and no other process open it at all
meanwhile, not even to read: an analyst's `duckdb` shell left open on the warehouse used to
fail every write of the pipeline after DuckDB's few retries. So readers do not open the
warehouse. After each committed write, while it still holds the warehouse's exclusive turn
(`warehouse_lock`) and its DuckDB connection is closed (DuckDB checkpoints on close), the
writer copies the file to `<name>.read.duckdb` under a temporary name and renames it into
place. A reader that has the previous snapshot open keeps its file (the rename gives the name
to a new one) and blocks nobody; the next reader gets the new one.

A process outside Newsbench that still opens the warehouse file itself is waited for, saying
which process it is (its pid and command, from /proc/locks on Linux), instead of failing.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from newsbench_dagster.core.analytics.warehouse_lock import WAIT_S, WarehouseBusy, warehouse_turn

log = logging.getLogger("newsbench.warehouse")

SAY_EVERY_S = 30.0  # a writer waiting for an outside process repeats itself this often
POLL_S = 0.2

Say = Callable[[str], object]


def snapshot_path(database: str | Path) -> Path:
    """`data/warehouse.duckdb` -> `data/warehouse.read.duckdb`."""
    path = Path(database)
    stem = path.name.removesuffix(".duckdb")
    return path.with_name(f"{stem}.read.duckdb")


def is_current(database: str | Path) -> bool:
    """Whether the snapshot is a copy of the warehouse as it is now (the copy takes the
    warehouse's modification time and size; any write changes them)."""
    try:
        main, snap = Path(database).stat(), snapshot_path(database).stat()
    except FileNotFoundError:
        return False
    return (main.st_mtime_ns, main.st_size) == (snap.st_mtime_ns, snap.st_size)


def publish(database: str | Path) -> float:
    """Copy the warehouse to its snapshot (a temporary name, then an atomic rename); the
    seconds it took. The caller holds the exclusive turn and no open connection on the file."""
    started = time.perf_counter()
    main = Path(database)
    if Path(f"{main}.wal").exists():
        # A write not yet checkpointed into the file (a connection still open elsewhere in this
        # process when the writer closed its own): fold it in first, or the copy would lack it.
        import duckdb

        with duckdb.connect(str(main)) as con:
            con.execute("CHECKPOINT")
    snap = snapshot_path(main)
    tmp = snap.with_name(f".{snap.name}.{os.getpid()}.tmp")
    try:
        shutil.copyfile(main, tmp)
        st = main.stat()
        os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(tmp, snap)
    finally:
        tmp.unlink(missing_ok=True)
    return time.perf_counter() - started


@dataclass(frozen=True)
class Holder:
    """A process that holds DuckDB's own lock on a file."""

    pid: int
    writing: bool

    @property
    def command(self) -> str:
        try:
            raw = Path(f"/proc/{self.pid}/cmdline").read_bytes()
        except OSError:
            return "?"
        return " ".join(a.decode(errors="replace") for a in raw.split(b"\0") if a)[:120] or "?"

    def describe(self) -> str:
        if not self.pid:
            return "another process (pid unknown)"
        how = "to write" if self.writing else "read-only"
        return f"pid {self.pid} ({self.command}), open {how}"


def holders(database: str | Path) -> list[Holder]:
    """Other processes holding DuckDB's lock on the file (from /proc/locks; elsewhere, one
    holder of unknown pid when a test lock on the file fails). DuckDB locks a database file
    with fcntl record locks: shared to read, exclusive to write."""
    path = Path(database)
    try:
        inode = path.stat().st_ino
    except FileNotFoundError:
        return []
    try:
        table = Path("/proc/locks").read_text()
    except OSError:
        return _probe(path)
    found = []
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 8 or fields[1] == "->" or fields[1] not in ("POSIX", "OFDLCK"):
            continue
        kind, pid, where = fields[3], fields[4], fields[5]
        if where.rsplit(":", 1)[-1] == str(inode) and pid.isdigit() and int(pid) != os.getpid():
            found.append(Holder(int(pid), writing=kind == "WRITE"))
    return found


def _probe(path: Path) -> list[Holder]:
    # Called with no connection on the file open in this process: closing the probe's
    # descriptor drops every record lock this process has on the file.
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return [Holder(0, writing=False)]
    finally:
        os.close(fd)
    return []


def wait_for_outsiders(database: str | Path, say: Say, wait_s: float = WAIT_S) -> float:
    """Wait while processes outside Newsbench hold the warehouse file (an analyst's `duckdb`
    shell, a notebook), saying who they are; the seconds waited. Called holding the exclusive
    turn, so every Newsbench process is already out of the way."""
    started = time.monotonic()
    said = -SAY_EVERY_S
    while found := holders(database):
        waited = time.monotonic() - started
        who = "; ".join(h.describe() for h in found)
        if waited > wait_s:
            raise WarehouseBusy(
                f"{database}: still held after {waited:.0f} s by {who}, a process outside "
                f"Newsbench; close it (readers open {snapshot_path(database)})"
            )
        if waited - said >= SAY_EVERY_S:
            said = waited
            say(
                f"waiting for {database}: held by {who}, a process outside Newsbench; "
                f"the write goes on when it closes the file (readers should open the "
                f"snapshot {snapshot_path(database)})"
            )
        time.sleep(POLL_S)
    return time.monotonic() - started


@contextmanager
def writing(database: str | Path, *, wrote: bool = True, say: Say = log.warning) -> Iterator[None]:
    """Around a writer's DuckDB connection, inside its exclusive turn: first wait for outside
    holders of the file, then, once the connection was closed without an error, publish the
    snapshot (after a write, or whenever it is not current)."""
    if str(database) in ("", ":memory:"):
        yield
        return
    wait_for_outsiders(database, say)
    yield
    if wrote or not is_current(database):
        publish(database)


def current(database: str | Path, say: Say = log.warning) -> Path:
    """The snapshot to read, brought up to date first when it is missing or older than the
    warehouse (written before snapshots existed, or by a process killed between its commit
    and its copy). That takes the writers' turn, so a reader then waits for a write, and says
    so."""
    snap = snapshot_path(database)
    if is_current(database):
        return snap

    def waiting(_: str) -> None:
        say(f"waiting for the warehouse ({database}): a run is writing it")

    with warehouse_turn(database, on_wait=waiting):
        if is_current(database):
            return snap
        writers = [h for h in holders(database) if h.writing]
        if writers:
            who = "; ".join(h.describe() for h in writers)
            if snap.exists():
                say(f"{database} is open for writing by {who}: reading the last snapshot {snap}")
                return snap
            raise WarehouseBusy(f"{database} is open for writing by {who}; no snapshot yet")
        publish(database)
    return snap
