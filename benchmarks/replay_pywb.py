"""pywb, the reference replay tool `replay_bench.py` compares ours with: found (or installed
with `uvx --from pywb`), run in proxy mode on loopback over the benchmark's WARC, and checked
for what it inserts into the pages it serves. Not a benchmark itself (no `__main__`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import httpx
from common import free_port
from replay_recording import HARBOR

from newsbench_dagster.core.replay.replayer import Recording


# -- pywb --------------------------------------------------------------------------------------
class PywbError(RuntimeError):
    pass


def find_pywb(explicit: str | None) -> tuple[Path, str]:
    """The directory holding pywb's `wayback` and `wb-manager`, and how it was found."""
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise PywbError(f"--pywb {explicit}: no such file")
        return path.parent, f"--pywb {explicit}"
    if not shutil.which("uvx"):
        raise PywbError("uvx not found: install uv or pass --pywb PATH/TO/wayback")
    probe = "import os, sys; print(os.path.dirname(sys.executable))"
    errors = []
    for python in (None, "3.11", "3.10"):
        cmd = ["uvx", *(["--python", python] if python else []), "--from", "pywb", "python"]
        try:
            done = subprocess.run(
                [*cmd, "-c", probe], capture_output=True, text=True, timeout=400, check=False
            )
        except subprocess.TimeoutExpired:
            errors.append(f"{' '.join(cmd)}: timed out")
            continue
        if done.returncode == 0:
            where = Path(done.stdout.strip().splitlines()[-1])
            if (where / "wayback").is_file():
                return where, " ".join(cmd[:-1])
        errors.append(f"{' '.join(cmd)}: {done.stderr.strip()[-300:]}")
    raise PywbError("pywb could not be installed with uvx: " + " | ".join(errors))


class Pywb:
    """pywb's `wayback` in proxy mode on loopback, replaying one WARC as collection `bench`."""

    def __init__(self, bindir: Path, root: Path, warc: Path, mode: str, metadata: bool):
        self.bindir, self.root, self.warc = bindir, root, warc
        self.mode, self.keep_metadata = mode, metadata
        self.proc: subprocess.Popen | None = None
        self.port = free_port()
        self.address = f"http://127.0.0.1:{self.port}"
        self.notes: dict = {}

    def _run(self, *args: str) -> None:
        done = subprocess.run(
            [str(self.bindir / "wb-manager"), *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            said = (done.stderr + done.stdout).strip()[-300:]
            raise PywbError(f"wb-manager {' '.join(args)} exited {done.returncode}: {said}")

    def start(self) -> str:
        self.root.mkdir(parents=True, exist_ok=True)
        self._run("init", "bench")
        self._run("add", "bench", str(self.warc.resolve()))
        # Our recorder's page-timeline `metadata` records carry the page URL as their target;
        # pywb indexes them as captures of that URL (the latest one, so proxy mode serves the
        # JSON instead of the page). Dropped from pywb's index unless --pywb-keep-metadata.
        dropped = 0
        if not self.keep_metadata:
            for index in (self.root / "collections" / "bench" / "indexes").glob("*.cdxj"):
                lines = index.read_text(encoding="utf-8").splitlines(keepends=True)
                kept = [line for line in lines if '"status"' in line]
                dropped += len(lines) - len(kept)
                index.write_text("".join(kept), encoding="utf-8")
        self.notes["index_entries_dropped"] = dropped
        # identity: recorded bytes as they are (the `id_` modifier); banner: pywb's default
        # (`bn_`: a wbinfo script inserted in HTML); wombat: plus wombatProxyMode.js, which
        # among other things fakes Date to the capture's time.
        proxy = {
            "coll": "bench",
            "recording": False,
            "enable_content_rewrite": self.mode != "identity",
            "enable_wombat": self.mode == "wombat",
        }
        (self.root / "config.yaml").write_text(json.dumps({"proxy": proxy}), encoding="utf-8")
        self.log = open(self.root / "wayback.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [str(self.bindir / "wayback"), "-p", str(self.port), "-b", "127.0.0.1"],
            cwd=self.root,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                tail = (self.root / "wayback.log").read_text(errors="replace")[-400:]
                raise PywbError(f"wayback exited with {self.proc.returncode}: {tail}")
            try:
                response = httpx.get(f"{HARBOR}/", proxy=self.address, timeout=5)
                break
            except httpx.HTTPError as e:
                if time.monotonic() > deadline:
                    raise PywbError(f"wayback did not answer on {self.address}: {e}") from e
                time.sleep(0.3)
        if response.status_code != 200:
            raise PywbError(f"pywb answered the front page with HTTP {response.status_code}")
        return self.address

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.proc:
            self.log.close()


def pywb_inserts(pywb: Pywb, rec: Recording, url: str) -> dict:
    """Whether pywb serves the recorded page byte for byte, and what it inserted if not."""
    recorded = next(rec.payload(e).body for e in rec.exchanges if e.url == url)
    served = httpx.get(url, proxy=pywb.address, timeout=10).content
    text, before = served.decode("utf-8", "replace"), recorded.decode("utf-8", "replace")
    markers = [m for m in ("wombat", "wbinfo", "_wb_", "pywb") if text.count(m) > before.count(m)]
    return {
        "identical": served == recorded,
        "bytes_added": len(served) - len(recorded),
        "markers": markers,
    }
