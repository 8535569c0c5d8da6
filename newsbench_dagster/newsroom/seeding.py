"""Seeded randomness that is identical across processes and Python runs.

Every choice the newsroom makes (story words, jitter, quirks, variants) comes from hashlib via
these helpers, never from random or hash() (which is salted per process).
"""

from __future__ import annotations

import hashlib


def stable_int(*parts: object) -> int:
    """A 64-bit integer derived from parts with sha256 (never hash(): it is salted per process)."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def stable_order(n: int, *parts: object) -> list[int]:
    """A seeded permutation of range(n)."""
    return sorted(range(n), key=lambda i: stable_int(*parts, i))
