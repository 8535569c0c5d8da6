"""Shared fixtures: a real newsroom on an ephemeral loopback port, and real Chromium."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.web.network import Fetcher, RobotsRules, Routing
from newsbench_dagster.core.web.sites import load_sites
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom
from newsbench_dagster.paths import SITES_FILE

SEED = 7


def pytest_collection_modifyitems(config, items):
    """Files marked `heavy(seconds)` first, longest first, then the rest in their order: the
    workers start on the longest files, and the short ones fill in at the end."""

    def weight(item) -> float:
        mark = item.get_closest_marker("heavy")
        return -(mark.args[0] if mark and mark.args else 0)

    items.sort(key=weight)


@pytest.fixture(scope="session")
def newsroom_server():
    server = NewsroomServer(Newsroom(seed=SEED)).start()
    yield server
    server.stop()


@pytest.fixture
def newsroom(newsroom_server):
    """The session's server with faults cleared before and after each test."""
    newsroom_server.faults.clear()
    yield newsroom_server
    newsroom_server.faults.clear()


@pytest.fixture(scope="session")
def registry():
    return load_sites(SITES_FILE)


@pytest.fixture(scope="session")
def routing(newsroom_server) -> Routing:
    return Routing.via_proxy(newsroom_server.address)


@pytest.fixture
def fetcher(routing, registry):
    with Fetcher(routing, registry.allowed_origins) as f:
        yield f


@pytest.fixture
def robots(fetcher, registry) -> RobotsRules:
    return RobotsRules.fetch(fetcher, registry.allowed_origins)


@pytest.fixture(scope="session")
def browser_options(routing) -> BrowserOptions:
    return BrowserOptions(routing=routing)


@pytest.fixture
def today():
    return datetime.now(UTC).date()


async def _observe_urls(options: BrowserOptions, urls: list[str]) -> list[dict]:
    from playwright.async_api import async_playwright

    from newsbench_dagster.core.harness.observe import observe

    out = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(**options.launch_kwargs())
        context = await browser.new_context(**options.context_kwargs())
        page = await context.new_page()
        for url in urls:
            await page.goto(url, wait_until="domcontentloaded")
            out.append(await observe(page))
        await browser.close()
    return out


@pytest.fixture(scope="session")
def observe_urls(browser_options):
    """Real harness observations of pages, taken in real Chromium."""
    return lambda urls: asyncio.run(_observe_urls(browser_options, urls))


@pytest.fixture(scope="session")
def observe_with():
    """Observations through another server (e.g. a newsroom with its clock frozen)."""

    def observe_urls(server, urls):
        options = BrowserOptions(routing=Routing.via_proxy(server.address))
        return asyncio.run(_observe_urls(options, urls))

    return observe_urls


@pytest.fixture(scope="session")
def harbor_today(newsroom_server, registry):
    """Today's harbor tasks (the lead, one article's metadata) and every site's robots rules,
    polled once for the session; callers copy the tasks before changing them."""
    from newsbench_dagster.core.tasks.poll import poll_site
    from newsbench_dagster.core.tasks.produce import make_tasks
    from tests.support.tasks import LEAD_AND_METADATA

    day = datetime.now(UTC).date()
    with Fetcher(Routing.via_proxy(newsroom_server.address), registry.allowed_origins) as f:
        rows = poll_site(registry.get("harbor"), f, None, day)
        robots = RobotsRules.fetch(f, registry.allowed_origins)
    return day, make_tasks(registry.get("harbor"), day, rows, 1, LEAD_AND_METADATA), robots
