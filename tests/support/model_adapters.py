"""What the model-adapter tests share: a fake key recognisable wherever it leaks, the variable
it is read from, and enough of BrowserTools for a run that never reaches
a browser."""

from __future__ import annotations

import zipfile
from pathlib import Path
from types import SimpleNamespace

FAKE_KEY = "sk-nbtest-FAKE-KEY-0b5e7c1d9a"  # recognisable, so a leak anywhere is found
KEY_ENV = "NEWSBENCH_TEST_MODEL_KEY"


def assert_no_key_in_files(root: Path) -> None:
    """No file under `root` holds the key, inside zips (traces) included."""
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files  # the run did write artifacts
    for path in files:
        blobs = [path.read_bytes()]
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                blobs += [z.read(n) for n in z.namelist()]
        assert not any(FAKE_KEY.encode() in b for b in blobs), path


class NoBrowserTools:
    """Enough of BrowserTools for a run whose model never calls a tool."""

    def __init__(self) -> None:
        self.tokens = 0
        self.trajectory = SimpleNamespace(answers=[])

    def use_tokens(self, n: int) -> None:
        self.tokens += n
