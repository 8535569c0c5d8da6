"""How a candidate is evaluated and gated: the task set, the trials and the gate's numbers.
One place, so the sensor-triggered run, the schedules and `newsbench gate` agree."""

from dagster import ConfigurableResource
from pydantic import Field

from newsbench_dagster.core.agents.protocol import AgentManifest
from newsbench_dagster.core.analytics.stats import MIN_CLUSTERS, MIN_TASKS, REGRESSION_MARGIN
from newsbench_dagster.core.release.decide import Policy
from newsbench_dagster.paths import PROJECT_ROOT


class ReleaseResource(ConfigurableResource):
    suites_dir: str = Field(default=str(PROJECT_ROOT / "suites"))
    heldout_n: int = Field(default=60, ge=0, description="Held-out tasks drawn from news_tasks")
    heldout_days: int = Field(default=2, ge=1, description="...from this many recent days")
    seed: int = Field(default=0, description="Seed of the held-out draw and the bootstrap")
    sites: list[str] | None = Field(default=None, description="Only these sites (default: all)")
    intents: list[str] | None = Field(default=None, description="Only these intents")
    baseline: str | None = Field(
        default=None, description="Baseline manifest name (default: the main channel's)"
    )
    trials: int = Field(default=2, ge=1)
    max_reruns: int = Field(default=2, ge=0)
    margin: float = REGRESSION_MARGIN
    min_tasks: int = MIN_TASKS
    min_clusters: int = MIN_CLUSTERS
    slice_min_tasks: int = 10
    volatility_threshold: float = 0.3

    def policy(self) -> Policy:
        return Policy(
            margin=self.margin,
            min_tasks=self.min_tasks,
            min_clusters=self.min_clusters,
            slice_min_tasks=self.slice_min_tasks,
            trials=self.trials,
            max_reruns=self.max_reruns,
            volatility_threshold=self.volatility_threshold,
            seed=self.seed,
        )

    def baseline_for(self, candidate: AgentManifest, manifests: list[AgentManifest]):
        """The shipped version a candidate is compared with: the configured name, else the
        main-channel manifest of the candidate's own name, else the only main one."""
        main = [m for m in manifests if m.channel == "main"]
        if self.baseline:
            named = [m for m in main if m.name == self.baseline]
            if not named:
                raise ValueError(f"no main-channel manifest named {self.baseline!r}")
            return named[0]
        same = [m for m in main if m.name == candidate.name]
        if same:
            return same[0]
        if len(main) != 1:
            raise ValueError(
                f"cannot choose a baseline for {candidate.agent_version}: "
                f"{len(main)} main-channel manifests; set release.baseline"
            )
        return main[0]
