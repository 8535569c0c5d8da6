"""How runs are run: `RunSettings` (trials, concurrency, budgets' defaults, probes, pacing,
which artifacts are kept) and the defaults a task's constraints fall back to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ENTRY_TIMEOUT_MS = 20_000
# A model agent's context is resent every turn: ten steps of a real agent are ~100k tokens.
DEFAULT_MAX_TOKENS = 200_000
DEFAULT_MAX_STEPS = 15

# Every kind of artifact a run can keep; RunSettings.artifacts picks (all by default).
ARTIFACT_KINDS = ("screenshot", "har", "console", "a11y", "dom", "trace", "spans")


@dataclass
class RunSettings:
    trials: int = 1
    concurrency: int = 2  # browser contexts in flight at once
    screenshot: bool = True
    observe_timeout_s: float = 10.0
    cleanup_timeout_s: float = 10.0
    default_max_seconds: float = 60.0
    entry_timeout_s: float = ENTRY_TIMEOUT_MS / 1000
    during_every_s: float = 10.0  # how often "during" probes sample while the agent works
    during_max: int = 3  # ...and at most how many times per run
    probes: bool = True  # off only to measure what the oracle's own page loads cost
    artifacts: tuple[str, ...] = ARTIFACT_KINDS
    default_max_bytes: int = 50_000_000  # bytes the agent's requests may pull in one run
    # Per-origin spacing of page loads across the whole pool (the sites' rate limits); the
    # larger of this and robots.txt's Crawl-delay applies.
    min_interval: dict[str, float] = field(default_factory=dict)
    pace: bool = True  # off only to measure the harness's own cost (benchmarks)
    # OpenTelemetry: OTLP/HTTP endpoint and headers for the spans; None = a file per run.
    otlp_endpoint: str | None = None
    otlp_headers: dict[str, str] = field(default_factory=dict, repr=False)
    # Draw the device / geo / network a task leaves open from its seed (anti-gaming).
    randomize_profiles: bool = False
    # Which task set this evaluation ran (the nightly full set, or a seeded sample: its seed
    # and task ids), stored with every run so the evaluation can be reproduced.
    task_set: dict[str, Any] | None = None
    # Candidate evaluation: alternate which agent goes first per task and trial (A B, B A),
    # in the evaluation's own run-id namespace; reruns of environment failures count attempts.
    interleave: bool = False
    namespace: str = ""
    attempt: int = 0
    # A rerun batch runs trial `first_trial` (the trial being retried) instead of 0.
    first_trial: int = 0
    # Where a task's relative files are found (its `replay.recording`, rules and grading
    # files); None = the working directory. The edge passes the project root.
    base_dir: str | None = None
    # The folder, under the partition's `runs/{site}/{day}/`, that this batch's run artifacts go
    # in (`core.partition_artifacts`: a pipeline attempt writes beside the rows the warehouse
    # holds, never over them); "" = straight under it (the CLI's one-off runs).
    artifact_folder: str = ""
    # Record live runs: a `core.replay.recorder.WarcRecorder` every allowed request of every run
    # is written to (what the agent and the harness loaded, to replay later).
    record: Any = None

    def keeps(self, kind: str) -> bool:
        return kind in self.artifacts and (kind != "screenshot" or self.screenshot)
