"""What the benchmarks share: the newsroom frozen at one instant (served in this process, as
the runs' world), the site registry, tasks made from the sites' polls, and runs through the
harness built as the pipeline builds it (`core.harness.build.build_runner`).

Not a benchmark itself (it has no `__main__`): the scripts beside it import it by name, as
`python benchmarks/<script>.py` puts this folder first on the import path.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime

from newsbench_dagster.core.agents.protocol import Agent, AgentManifest, build_agent
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.build import build_runner
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.tasks.intents import ALL_INTENTS
from newsbench_dagster.core.tasks.produce import todays_tasks
from newsbench_dagster.core.web.network import Fetcher, World
from newsbench_dagster.core.web.sites import SiteRegistry, load_sites
from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.launcher import health, newsroom_world
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom
from newsbench_dagster.paths import SITES_FILE

# The instant most benchmarks freeze the newsroom at, and the seed of its world.
FROZEN_AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SEED = 7


def sites() -> SiteRegistry:
    """The project's allowlist (every site of the newsroom)."""
    return load_sites(SITES_FILE)


def reference_agent(version: str = "bench") -> Agent:
    """The reference agent, as the benchmarks run it."""
    return build_agent(AgentManifest(name="reference", version=version, adapter="reference"))


def thinking_agent(think_s: float) -> Agent:
    """The reference agent at a model's pace: every tool call waits `think_s` first, so a run
    is mostly waiting, as a model agent's is (the adapter's `params.think_s`)."""
    manifest = AgentManifest(
        name="reference",
        version=f"think{think_s:g}",
        adapter="reference",
        params={"think_s": think_s},
    )
    return build_agent(manifest)


@contextmanager
def frozen_newsroom(at: datetime = FROZEN_AT) -> Iterator[tuple[NewsroomServer, World]]:
    """A newsroom on a loopback port with its clock stopped at `at` (`move_to` moves
    it), and the runs' world it is: routing scoped per run, and the manifest of its seed and
    revision, as `newsbench run` sees it."""
    with NewsroomServer(Newsroom(seed=SEED), clock=FixedClock(at)) as server:
        yield server, move_to(server, at)


def move_to(server: NewsroomServer, at: datetime) -> World:
    """Move the frozen `server`'s clock to `at`; the runs' world there (its manifest records
    the new frozen instant, which scoring measures freshness against)."""
    server.clock.set(at)
    return newsroom_world(server.port, health(server.port) or {})


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def polled_tasks(
    registry: SiteRegistry,
    world: World,
    day: date,
    intents: Sequence[str] = ALL_INTENTS,
    articles: int = 3,
    keys: Iterable[str] | None = None,
    reserve: bool = False,
) -> list[dict]:
    """The producer's tasks of `intents` for `day` from a poll of each site (`keys`, default
    all), `articles` metadata tasks per site, each site compared with its partner; with
    `reserve`, the release gate's held-out reserve after them."""
    with Fetcher(world.routing, registry.allowed_origins) as fetcher:
        return todays_tasks(registry, fetcher, day, keys, tuple(intents), articles, reserve)


def run_tasks(
    agents: Sequence[Agent],
    tasks: list[dict],
    day: date,
    *,
    world: World,
    registry: SiteRegistry,
    settings: RunSettings,
) -> list[dict]:
    """Every task with every agent through the harness (robots.txt and pacing from
    `registry`), artifacts in a directory dropped afterwards; the run rows."""
    with tempfile.TemporaryDirectory() as tmp:
        runner = build_runner(
            agents,
            world=world,
            store=LocalArtifactStore(tmp),
            registry=registry,
            settings=settings,
        )
        return asyncio.run(runner.run(tasks, day))


def parse_args(parser: argparse.ArgumentParser, **smoke: object) -> argparse.Namespace:
    """The command line, plus `--smoke`: the sizes in `smoke` replace the ones given, so the
    benchmark runs its real code path end to end in seconds (its numbers then mean nothing;
    tests/benchmarks runs every benchmark so)."""
    parser.add_argument(
        "--smoke", action="store_true", help="seconds, tiny sizes: does it still run end to end?"
    )
    args = parser.parse_args()
    if args.smoke:
        for name, value in smoke.items():
            setattr(args, name, value)
    return args
