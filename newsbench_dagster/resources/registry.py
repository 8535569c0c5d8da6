"""The two registries the pipeline reads: the site allowlist and the agent manifests."""

from dagster import ConfigurableResource
from pydantic import Field

from newsbench_dagster.core.agents.protocol import AgentManifest, load_manifests
from newsbench_dagster.core.web.sites import SiteRegistry, load_sites
from newsbench_dagster.paths import AGENTS_DIR, SITES_FILE


class SiteRegistryResource(ConfigurableResource):
    path: str = Field(default=str(SITES_FILE))

    def load(self) -> SiteRegistry:
        return load_sites(self.path)


class AgentRegistryResource(ConfigurableResource):
    directory: str = Field(default=str(AGENTS_DIR))

    def main_channel(self) -> list[AgentManifest]:
        """The shipped baselines: every manifest on the `main` channel."""
        return [m for m in load_manifests(self.directory) if m.channel == "main"]
