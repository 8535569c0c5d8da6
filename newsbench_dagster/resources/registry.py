"""The two registries the pipeline reads: the site allowlist and the agent manifests."""

import logging
from collections.abc import Callable

from dagster import ConfigurableResource
from pydantic import Field

from newsbench_dagster.core.agents.protocol import AgentManifest, ManifestScan, scan_manifests
from newsbench_dagster.core.errors import ConfigError
from newsbench_dagster.core.web.sites import SiteRegistry, load_sites
from newsbench_dagster.paths import AGENTS_DIR, SITES_FILE

log = logging.getLogger("newsbench.agents")


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

    def scan(self) -> ManifestScan:
        """The usable manifests and the broken ones, set aside (`scan_manifests`)."""
        return scan_manifests(self.directory)

    def main_channel(self, warn: Callable[[str], object] = log.warning) -> list[AgentManifest]:
        """The agents of the nightly job: every manifest on the `main` channel, and the
        candidates `also_run` names (opted in, so their KPIs sit beside the baseline's). A
        broken manifest is skipped, and said through `warn` (loudly when it may be a main
        agent); none left on the main channel because of one is an error naming the files."""
        found = self.scan()
        for line in found.warnings():
            warn(line)
        manifests = found.manifests
        missing = sorted(set(self.also_run) - {m.name for m in manifests})
        if missing:
            raise ConfigError(
                f"agents.also_run: no usable manifest named {', '.join(missing)} in "
                f"{self.directory}" + (f" (broken: {found.broken_files()})" if found.broken else "")
            )
        chosen = [m for m in manifests if m.channel == "main" or m.name in self.also_run]
        lost = [b for b in found.broken if b.maybe_main]
        if lost and not any(m.channel == "main" for m in chosen):
            raise ConfigError(
                f"{self.directory}: no main-channel agent left: " + "; ".join(b.error for b in lost)
            )
        return chosen
