"""The one way to assemble the harness. Assets, the CLI and the benchmarks all build their
`Runner` here, so a run is the same run whoever starts it: the same pacing (the allowlist's
rate limits), the same robots.txt (fetched through the run's own world), the same browser
launch and the same environment manifest."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from newsbench_dagster.core.agents.protocol import Agent
from newsbench_dagster.core.artifacts import ArtifactStore
from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.harness.runner import Runner
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.web.network import Fetcher, RobotsRules, World
from newsbench_dagster.core.web.sites import SiteRegistry


def fetch_robots(world: World, registry: SiteRegistry, origins: Iterable[str] | None = None):
    """robots.txt of `origins` (default: every allowlisted origin), read through the world
    the runs will see; None for a replay, whose robots.txt is the recording's."""
    if world.manifest.get("kind") == "replay":
        return None
    with Fetcher(world.routing, registry.allowed_origins) as fetcher:
        return RobotsRules.fetch(fetcher, set(origins or registry.allowed_origins))


def build_runner(
    agents: Sequence[Agent],
    *,
    world: World,
    store: ArtifactStore,
    registry: SiteRegistry | None = None,
    settings: RunSettings | None = None,
    options: BrowserOptions | None = None,
    robots: RobotsRules | None = None,
    robots_origins: Iterable[str] | None = None,
) -> Runner:
    """A runner for `agents` in `world`, writing artifacts to `store`.

    With a `registry`, page loads are paced by its rate limits (unless `settings` set
    `min_interval` already) and robots.txt is fetched for `robots_origins` (default: all of its
    origins) unless `robots` is given. `options` carries the browser's executable and
    headless flag; its routing is always the world's."""
    settings = settings or RunSettings()
    if registry is not None and not settings.min_interval:
        settings = replace(settings, min_interval=registry.min_intervals())
    if robots is None and registry is not None:
        robots = fetch_robots(world, registry, robots_origins)
    return Runner(
        agents,
        options=replace(options or BrowserOptions(), routing=world.routing),
        robots=robots,
        store=store,
        settings=settings,
        world=world.manifest,
    )
