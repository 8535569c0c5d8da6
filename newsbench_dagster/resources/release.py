"""How a candidate is evaluated and gated: `core.release.policy.Policy`, as Dagster config.
The fields mirror the policy's and take their defaults and descriptions from it, so the
sensor-triggered run, the schedules and `newsbench gate` share one set of numbers."""

from dagster import ConfigurableResource
from pydantic import Field

from newsbench_dagster.core.agents.protocol import AgentManifest
from newsbench_dagster.core.release.policy import Policy, choose_baseline
from newsbench_dagster.paths import SUITES_DIR


def _policy(name: str):
    field = Policy.model_fields[name]
    return Field(default=field.default, description=field.description)


class ReleaseResource(ConfigurableResource):
    suites_dir: str = Field(default=str(SUITES_DIR), description="Curated suites directory")
    heldout_n: int = _policy("heldout_n")
    heldout_days: int = _policy("heldout_days")
    sites: list[str] | None = _policy("sites")
    intents: list[str] | None = _policy("intents")
    baseline: str | None = _policy("baseline")
    trials: int = _policy("trials")
    max_reruns: int = _policy("max_reruns")
    seed: int = _policy("seed")
    margin: float = _policy("margin")
    max_looks: int = _policy("max_looks")
    spending: str = _policy("spending")
    min_tasks: int = _policy("min_tasks")
    min_clusters: int = _policy("min_clusters")
    slice_min_tasks: int = _policy("slice_min_tasks")
    volatility_threshold: float = _policy("volatility_threshold")
    pii_max_rate: float = _policy("pii_max_rate")
    alpha: float = _policy("alpha")

    def policy(self) -> Policy:
        """The policy this configuration describes (validated: a bad number is named)."""
        return Policy(**self.model_dump(include=set(Policy.model_fields)))

    def baseline_for(self, candidate: AgentManifest, manifests: list[AgentManifest]):
        """The baseline by the one rule (`core.release.policy.choose_baseline`)."""
        return choose_baseline(candidate, manifests, self.baseline)
