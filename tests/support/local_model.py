"""The rule for tests that run the real local model: they need the `local-model` extra;
without it they are skipped, saying how to install it — except where
NEWSBENCH_REQUIRE_LOCAL_MODEL=1 (CI sets it), where a missing extra fails them."""

from __future__ import annotations

import importlib.util
import os

import pytest


def require_local_model() -> None:
    """Skip (or, where required, fail) the calling test or module without the extra."""
    if importlib.util.find_spec("xllamacpp") is not None:
        return
    why = "the local-model extra is not installed (scripts/install.sh --local-model)"
    if os.environ.get("NEWSBENCH_REQUIRE_LOCAL_MODEL") == "1":
        pytest.fail(f"NEWSBENCH_REQUIRE_LOCAL_MODEL=1 but {why}", pytrace=False)
    pytest.skip(why, allow_module_level=True)
