"""Semantic similarity for oracles that judge free text ("is this summary about these stories?").

Two backends share one small interface (:class:`Similarity`):

* ``minilm-l6-v2`` (core.reading.minilm) — all-MiniLM-L6-v2 sentence embeddings in numpy;
  needs the optional extra ``semantic`` (``uv sync --extra semantic``).
* ``lexical-fallback`` (core.reading.lexical_similarity) — always available; a fallback and
  says so (``is_fallback=True``); every verdict should record ``backend.name``.

:func:`backend` picks one (cached). Scores are in [0, 1]; blank text scores 0.0 against
anything. Nothing here reads the environment or touches the disk at import time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from newsbench_dagster.core.reading.lexical_similarity import LEXICAL_NAME, LexicalSimilarity
from newsbench_dagster.core.reading.minilm import MiniLMSimilarity
from newsbench_dagster.core.reading.minilm_model import missing_embedding_packages

log = logging.getLogger(__name__)

Prefer = Literal["auto", "lexical", "embedding"]


@runtime_checkable
class Similarity(Protocol):
    """A judge of "are these two texts about the same thing", in [0, 1]."""

    name: str
    is_fallback: bool

    def similarity(self, a: str, b: str) -> float: ...

    def similarities(self, query: str, refs: Sequence[str]) -> list[float]:
        """The score of ``query`` against each of ``refs``, computed in one batch where possible.
        Equal to ``similarity(query, r)`` for each ``r``, except that the lexical fallback
        detects the language once for the whole batch."""
        ...


_BACKENDS: dict[tuple[str, str | None], Similarity] = {}
_BACKENDS_LOCK = threading.Lock()


def backend(prefer: Prefer = "auto", *, cache_dir: str | Path | None = None) -> Similarity:
    """The similarity backend to judge with (one instance per choice, cached).

    * ``"auto"``: the MiniLM embedding backend when the ``semantic`` extra is installed, else
      the lexical fallback (also when the model fails to load; that is logged as a warning).
    * ``"lexical"``: always the lexical fallback.
    * ``"embedding"``: the embedding backend, or :class:`SemanticBackendUnavailable` naming
      the missing package(s).

    Record ``.name`` (and ``.is_fallback``) with every verdict.
    """
    if prefer not in ("auto", "lexical", "embedding"):
        raise ValueError(f"prefer must be 'auto', 'lexical' or 'embedding', not {prefer!r}")
    if prefer == "lexical":
        return _cached(("lexical", None), LexicalSimilarity)
    key = ("embedding", str(cache_dir) if cache_dir is not None else None)
    if prefer == "embedding":
        return _cached(key, lambda: MiniLMSimilarity(cache_dir=cache_dir))
    with _BACKENDS_LOCK:
        if key in _BACKENDS:
            return _BACKENDS[key]
        auto_key = ("auto", key[1])
        if auto_key in _BACKENDS:
            return _BACKENDS[auto_key]
    missing = missing_embedding_packages()
    if missing:
        log.info("semantic: %s not installed; judging with %s", ", ".join(missing), LEXICAL_NAME)
        fallback = backend("lexical")
    else:
        try:
            return _cached(key, lambda: MiniLMSimilarity(cache_dir=cache_dir))
        except Exception as exc:  # a broken model must not take the oracles down: fall back
            log.warning("semantic: embedding model failed (%s); using %s", exc, LEXICAL_NAME)
            fallback = backend("lexical")
    with _BACKENDS_LOCK:
        return _BACKENDS.setdefault(auto_key, fallback)


def pin(prefer: Prefer) -> Similarity:
    """Make ``backend("auto")`` resolve to `prefer` in this process (a benchmark measuring the
    oracle as an install without the extra would judge)."""
    chosen = backend(prefer)
    with _BACKENDS_LOCK:
        _BACKENDS[("auto", None)] = chosen
    return chosen


def _cached(key: tuple[str, str | None], make: Any) -> Similarity:
    with _BACKENDS_LOCK:
        found = _BACKENDS.get(key)
        if found is None:
            found = _BACKENDS[key] = make()
        return found


def reset_backends() -> None:
    """Forget the cached backends (tests; or after installing the extra in a running process)."""
    with _BACKENDS_LOCK:
        _BACKENDS.clear()


def similarities(query: str, refs: Sequence[str], prefer: Prefer = "auto") -> list[float]:
    """``backend(prefer).similarities(query, refs)``."""
    return backend(prefer).similarities(query, refs)
