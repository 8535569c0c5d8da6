"""Hypothesis settings for the fuzz tests: deterministic in CI (derandomize, no example
database), no per-example deadline (the first parse of a kind warms caches), and example counts
that keep the whole folder within a minute on two busy cores. `HYPOTHESIS_PROFILE=deep` runs
twenty times as many examples, randomised, to hunt for new crashes locally."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

COMMON = {
    "deadline": None,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    "print_blob": True,
}
settings.register_profile("ci", max_examples=400, derandomize=True, **COMMON)
settings.register_profile("deep", max_examples=2000, derandomize=False, **COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
