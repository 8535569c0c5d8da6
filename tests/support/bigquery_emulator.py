"""A local BigQuery API emulator for the BigQuery tests: bqemulator on DuckDB, in its own
virtualenv (it brings google-cloud-bigquery-storage and its own pins of grpcio, sqlglot and
pyarrow, which the project's must not get), built with uv on first use under `.cache/` and
reused; started by `bqemulator_launch.py` on free loopback ports, stopped with its process
group."""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.support.net import free_port
from tests.support.paths import REPO
from tests.support.services import stop_group

# numpy: DuckDB's Python UDFs, which bqemulator registers at start, need it; bqemulator 1.4.0
# declares it only in extras.
REQUIREMENTS = ("bqemulator==1.4.0", "duckdb==2.0.1", "numpy==2.4.6")
VENV = REPO / ".cache" / "bqemulator-venv"  # git-ignored
LAUNCHER = Path(__file__).with_name("bqemulator_launch.py")
PROJECT = "test-proj"


def emulator_python(venv: Path = VENV) -> Path:
    """The emulator's interpreter, the virtualenv built first if missing or built with other
    pins (the pins it was built with are written into it last, so a half-built one is redone)."""
    python = venv / "bin" / "python"
    stamp = venv / "newsbench-requirements.txt"
    wanted = "\n".join(REQUIREMENTS) + "\n"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # test workers building it at once wait for one
        if python.exists() and stamp.exists() and stamp.read_text() == wanted:
            return python
        uv = shutil.which("uv")
        if uv is None:
            raise RuntimeError("uv is not on PATH: it builds the BigQuery emulator's virtualenv")
        for args in (
            [uv, "venv", str(venv), "--python", "3.11", "--clear", "--quiet"],
            [uv, "pip", "install", "--python", str(python), "--quiet", *REQUIREMENTS],
        ):
            done = subprocess.run(args, capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"{' '.join(args)} failed:\n{done.stderr[-3000:]}")
        stamp.write_text(wanted)
        return python


def _ready(url: str) -> bool:
    with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/readyz", timeout=1) as r:
        return r.status == 200
    return False


def _tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


@contextlib.contextmanager
def bigquery_emulator(timeout_s: float = 60) -> Iterator[str]:
    """bqemulator serving project `PROJECT` in memory on loopback until the block ends; yields
    its REST URL (what `BIGQUERY_EMULATOR_HOST` takes)."""
    python = emulator_python()
    workdir = Path(tempfile.mkdtemp(prefix="newsbench-bqemu-"))  # no .bqemu.toml is read
    log = workdir / "bqemulator.log"
    rest, grpc = free_port(), free_port()
    url = f"http://127.0.0.1:{rest}"
    # -I: the launcher's folder stays off sys.path (its neighbours would shadow bqemulator's).
    args = [str(python), "-I", str(LAUNCHER), "start", "--ephemeral"]
    args += ["--rest-port", str(rest), "--grpc-port", str(grpc), "--project", PROJECT]
    args += ["--log-level", "warning"]
    with log.open("w") as out:
        proc = subprocess.Popen(
            args, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + timeout_s
        while not _ready(url):
            exited = proc.poll() is not None
            if exited or time.monotonic() > deadline:
                what = f"exited with {proc.returncode}" if exited else "was not ready"
                raise RuntimeError(
                    f"the BigQuery emulator {what} before {url}/readyz answered "
                    f"(within {timeout_s:.0f} s); its log ends:\n{_tail(log)}"
                )
            time.sleep(0.1)
        yield url
    finally:
        stop_group(proc)
        shutil.rmtree(workdir, ignore_errors=True)
