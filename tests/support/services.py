"""Real Redis and PostgreSQL servers for the scale-out tests, started from Debian's binaries on
loopback in a temporary folder and stopped after (`scripts/install.sh` installs them); and
`stop_group`, how every test stops a server it started in its own session."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support.net import free_port

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def stop_group(proc: subprocess.Popen, grace_s: float = 10) -> None:
    """SIGTERM to the process group `proc` leads (started with start_new_session), then
    SIGKILL if it outlives `grace_s`: a slow shutdown is not what a test is about, and nothing
    is left behind."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 30)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _wait_for_port(port: int, what: str, proc: subprocess.Popen, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout_s:.0f} s")


def _binary(name: str, *candidates: Path) -> str:
    found = next((str(c) for c in candidates if c.exists()), None) or shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} is not installed: run scripts/install.sh (Debian's package)")
    return found


@contextlib.contextmanager
def _serving(args: list[str], port: int, what: str) -> Iterator[None]:
    """`args` running until the block ends, once it listens on `port`."""
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, what, proc)
        yield
    finally:
        proc.terminate()
        proc.wait(20)


@contextlib.contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """A Redis server on a free loopback port, no persistence; yields its URL."""
    binary = _binary("redis-server", Path("/usr/bin/redis-server"))
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(workdir)]
    with _serving(args, port, "redis-server"):
        yield f"redis://127.0.0.1:{port}/0"


def _as_postgres(args: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root; Debian's package made the postgres user.
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL cluster (trust auth, loopback only); yields its URL. Its folder
    is its own under /tmp: pytest's are private to root, which the postgres user cannot enter."""
    initdb = _binary("initdb", PG_BIN / "initdb")
    postgres = _binary("postgres", PG_BIN / "postgres")
    workdir = Path(tempfile.mkdtemp(prefix="newsbench-pg-"))
    data = workdir / "pgdata"
    if os.geteuid() == 0:
        shutil.chown(workdir, "postgres", "postgres")
    subprocess.run(
        _as_postgres([initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]),
        check=True,
        capture_output=True,
    )
    port = free_port()
    args = _as_postgres(
        [postgres, "-D", str(data), "-p", str(port), "-h", "127.0.0.1"]
        + ["-k", str(workdir), "-c", "fsync=off", "-c", "max_connections=100"]
    )
    try:
        with _serving(args, port, "postgres"):
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
