"""The artifact store: screenshots, observations, trajectories and raw feeds, addressed by URI.

Locally a folder (`file://` URIs); elsewhere any fsspec URL (`gs://bucket/prefix` with gcsfs,
`s3://...` with s3fs installed) behind the same calls, chosen by `artifact_store(root)`.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit
from urllib.request import url2pathname

from newsbench_dagster.core.crash_points import ARTIFACT_WRITE, crash_point


class ArtifactStore(Protocol):
    def uri(self, key: str) -> str: ...
    def put(self, key: str, data: bytes) -> str: ...
    def put_json(self, key: str, value: object) -> str: ...
    def get(self, uri: str) -> bytes: ...
    def read_json(self, key: str) -> object | None: ...
    def key_of(self, uri: str) -> str | None: ...


def _json_bytes(value: object) -> bytes:
    # Compact: an indented dump runs json's pure-Python encoder, ~5x slower per run.json
    # (`jq . run.json` reads it indented).
    return json.dumps(value, default=str, separators=(",", ":")).encode()


class LocalArtifactStore:
    """Artifacts as files under `root`; writes are atomic so a crash never leaves half a file."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if self.root not in path.parents:
            raise ValueError(f"artifact key escapes the store: {key!r}")
        return path

    def uri(self, key: str) -> str:
        """The URI `put(key, ...)` returns, without writing anything."""
        return self._path(key).as_uri()

    def key_of(self, uri: str) -> str | None:
        """The key of one of this store's artifacts, from its URI (None: not one of them)."""
        path = local_path(uri)
        if path is None:
            return None
        path = path.resolve()
        return path.relative_to(self.root).as_posix() if self.root in path.parents else None

    def put(self, key: str, data: bytes) -> str:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        crash_point(ARTIFACT_WRITE, path.name)  # tests only (`core.crash_points`)
        os.replace(tmp, path)
        return path.as_uri()

    def put_json(self, key: str, value: object) -> str:
        return self.put(key, _json_bytes(value))

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
        path = local_path(uri) if urlsplit(uri).scheme == "file" else None
        if path is None:
            raise ValueError(f"not a local artifact URI: {uri!r}")
        return path.read_bytes()


def local_path(uri: str | None) -> Path | None:
    """The file behind a local artifact (a `file://` URI or a plain path); None for the URIs
    of other stores (gs://, s3://), which are linked, not read."""
    if not uri:
        return None
    parts = urlsplit(uri)
    if parts.scheme == "file":
        return Path(url2pathname(parts.path))
    return None if "://" in uri else Path(uri)


def _checked_key(key: str) -> str:
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"artifact key escapes the store: {key!r}")
    return key


class FsspecArtifactStore:
    """Artifacts as objects under an fsspec URL (`gs://bucket/newsbench`, `s3://...`,
    `memory://...`). An object store writes an object whole or not at all, so no temporary
    name is needed; the URIs it returns are the objects' own URLs."""

    def __init__(self, root: str) -> None:
        import fsspec  # a dependency of dagster's; the protocol's package (gcsfs, s3fs) is not

        try:
            self.fs, path = fsspec.core.url_to_fs(root)
        except (ImportError, ValueError) as e:
            raise ValueError(f"artifact store {root!r}: {e}") from e
        self.root = path.rstrip("/")

    def uri(self, key: str) -> str:
        """The URI `put(key, ...)` returns, without writing anything."""
        return self.fs.unstrip_protocol(f"{self.root}/{_checked_key(key)}")

    def key_of(self, uri: str) -> str | None:
        """The key of one of this store's artifacts, from its URI (None: not one of them)."""
        prefix = self.fs.unstrip_protocol(self.root) + "/"
        if not uri.startswith(prefix) or ".." in uri.split("/"):
            return None
        return uri[len(prefix) :]

    def put(self, key: str, data: bytes) -> str:
        path = f"{self.root}/{_checked_key(key)}"
        self.fs.pipe_file(path, data)
        return self.fs.unstrip_protocol(path)

    def put_json(self, key: str, value: object) -> str:
        return self.put(key, _json_bytes(value))

    def read_json(self, key: str) -> object | None:
        path = f"{self.root}/{_checked_key(key)}"
        try:
            return json.loads(self.fs.cat_file(path))
        except (FileNotFoundError, ValueError):
            return None

    def get(self, uri: str) -> bytes:
        own = uri.startswith(self.fs.unstrip_protocol(self.root) + "/")
        if not own or ".." in uri.split("/"):
            raise ValueError(f"not an artifact of this store ({self.root}): {uri!r}")
        return self.fs.cat_file(self.fs._strip_protocol(uri))


def artifact_store(root: str | Path) -> ArtifactStore:
    """The store for `root`: a folder (a path or a file:// URL) or any other fsspec URL."""
    text = str(root)
    if "://" not in text:
        return LocalArtifactStore(text)
    if text.startswith("file://"):
        return LocalArtifactStore(local_path(text))
    return FsspecArtifactStore(text)
