"""The two registries the pipeline reads: the site allowlist and the agent manifests."""

from dagster import ConfigurableResource
from pydantic import Field

from newsbench_dagster.core.agents.protocol import AgentManifest, load_manifests
from newsbench_dagster.core.errors import ConfigError
from newsbench_dagster.core.web.sites import SiteRegistry, load_sites
from newsbench_dagster.paths import AGENTS_DIR, SITES_FILE


class SiteRegistryResource(ConfigurableResource):
    path: str = Field(default=str(SITES_FILE))

    def load(self) -> SiteRegistry:
        return load_sites(self.path)


class AgentRegistryResource(ConfigurableResource):
    directory: str = Field(default=str(AGENTS_DIR))
    also_run: list[str] = Field(
        default_factory=list,
        description="Candidate manifests (by name) the nightly job runs beside the main "
        "channel, e.g. ['smollm2-tools'] for a local model's KPIs next to the reference's",
    )

    def main_channel(self) -> list[AgentManifest]:
        """The agents of the nightly job: every manifest on the `main` channel, and the
        candidates `also_run` names (opted in, so their KPIs sit beside the baseline's)."""
        manifests = load_manifests(self.directory)
        missing = sorted(set(self.also_run) - {m.name for m in manifests})
        if missing:
            raise ConfigError(
                f"agents.also_run: no manifest named {', '.join(missing)} in {self.directory}"
            )
        return [m for m in manifests if m.channel == "main" or m.name in self.also_run]
