"""The release policy: every number and choice of a candidate evaluation, with its one set of
defaults, and the rule that picks the baseline. Dagster's `release` resource, `newsbench gate`
and the agent registry sensor all read it; the decision record stores it whole."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from newsbench_dagster.core.errors import ConfigError
from newsbench_dagster.core.release.thresholds import MARGIN, MIN_TASKS
from newsbench_dagster.core.scoring.compliance import PII_MAX_RATE

if TYPE_CHECKING:
    from newsbench_dagster.core.agents.protocol import AgentManifest


class Policy(BaseModel):
    """How a candidate is evaluated and gated."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # -- what runs
    heldout_n: int = Field(
        100, ge=0, description="Held-out tasks drawn from recent news_tasks, per look"
    )
    heldout_days: int = Field(2, ge=1, description="...from this many recent days")
    sites: list[str] | None = Field(None, description="Only these sites (default: all)")
    intents: list[str] | None = Field(None, description="Only these intents (default: all)")
    baseline: str | None = Field(
        None, description="Baseline manifest name (default: see choose_baseline)"
    )
    trials: int = Field(2, ge=1, description="Runs of each task per agent")
    max_reruns: int = Field(2, ge=0, description="Reruns of a run the environment broke")
    seed: int = Field(0, description="Seed of the held-out draws")
    # -- how it is judged (core/release/sequential.py)
    margin: float = Field(MARGIN, lt=0, description="Pass when the lower bound is above this")
    alpha: float = Field(
        0.025, gt=0, lt=0.5, description="Error of each decision over all looks (one-sided)"
    )
    max_looks: int = Field(
        12, ge=1, le=20, description="Looks at most: the run budget, in batches of heldout_n"
    )
    spending: Literal["obrien_fleming", "pocock"] = Field(
        "pocock", description="How alpha is spent over the looks (Lan-DeMets)"
    )
    min_tasks: int = Field(MIN_TASKS, ge=2, description="A pass needs this many tasks")
    min_clusters: int = Field(3, ge=1, description="...over this many sites")
    slice_min_tasks: int = Field(
        10, ge=2, description="Fewer: a slice is reported, not gated (nor a block overall)"
    )
    volatility_threshold: float = Field(
        0.3, ge=0, le=1, description="Baseline flip share above which a site is set aside"
    )
    pii_max_rate: float = Field(PII_MAX_RATE, ge=0, le=1, description="Answers with PII, at most")

    def as_dict(self) -> dict:
        return self.model_dump()


def choose_baseline(
    candidate: AgentManifest, manifests: Sequence[AgentManifest], named: str | None = None
) -> AgentManifest:
    """The shipped version a candidate is compared with, the one rule for every caller:

    1. the main-channel manifest called `named` (the policy's `baseline`), when it is set;
    2. else the main-channel manifest of the candidate's own name;
    3. else the only main-channel manifest.

    Anything else is a ConfigError that names the choices."""
    main = [m for m in manifests if m.channel == "main"]
    names = ", ".join(m.agent_version for m in main) or "none"
    if named:
        found = [m for m in main if m.name == named]
        if not found:
            raise ConfigError(f"no main-channel manifest named {named!r} (main channel: {names})")
        return found[0]
    same = [m for m in main if m.name == candidate.name]
    if same:
        return same[0]
    if len(main) != 1:
        raise ConfigError(
            f"cannot choose a baseline for {candidate.agent_version}: {len(main)} main-channel "
            f"manifests ({names}) and none named {candidate.name!r}; set the policy's baseline"
        )
    return main[0]
