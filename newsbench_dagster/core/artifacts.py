"""The artifact store: screenshots, observations, trajectories and raw feeds, addressed by URI.

Locally a folder (`file://` URIs); in production object storage behind the same two calls.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit
from urllib.request import url2pathname


class ArtifactStore(Protocol):
    def put(self, key: str, data: bytes) -> str: ...
    def put_json(self, key: str, value: object) -> str: ...
    def get(self, uri: str) -> bytes: ...
    def read_json(self, key: str) -> object | None: ...


class LocalArtifactStore:
    """Artifacts as files under `root`; writes are atomic so a crash never leaves half a file."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()

    def put(self, key: str, data: bytes) -> str:
        path = (self.root / key).resolve()
        if self.root not in path.parents:
            raise ValueError(f"artifact key escapes the store: {key!r}")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return path.as_uri()

    def put_json(self, key: str, value: object) -> str:
        # Compact: an indented dump runs json's pure-Python encoder, ~5x slower per run.json
        # (`jq . run.json` reads it indented).
        return self.put(key, json.dumps(value, default=str, separators=(",", ":")).encode())

    def read_json(self, key: str) -> object | None:
        """A JSON artifact by its key; None when there is none (or it is unreadable)."""
        path = (self.root / key).resolve()
        if self.root not in path.parents or not path.is_file():
            return None
        try:
            return json.loads(path.read_bytes())
        except ValueError:
            return None

    def get(self, uri: str) -> bytes:
        parts = urlsplit(uri)
        if parts.scheme != "file":
            raise ValueError(f"not a local artifact URI: {uri!r}")
        return Path(url2pathname(parts.path)).read_bytes()
