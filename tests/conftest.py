"""Shared fixtures: a real newsroom on an ephemeral loopback port, and real Chromium."""

from __future__ import annotations

import asyncio
import gc
import os
import random
import sys
from datetime import UTC, datetime

import pytest

from newsbench_dagster.core.harness.browser import BrowserOptions, keep_node_compiled
from newsbench_dagster.core.web.network import Fetcher, RobotsRules, Routing
from newsbench_dagster.core.web.sites import load_sites
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom
from newsbench_dagster.paths import SITES_FILE

SEED = 7

pytest_plugins = ["tests.support.cpu_report"]


ORDERS = ("heavy-first", "reverse", "random")


def pytest_addoption(parser):
    parser.addoption(
        "--order",
        choices=ORDERS,
        default="heavy-first",
        help="test order: heavy-first (default: the scheduling below), reverse (files in "
        "reverse collection order) or random (files and each file's tests shuffled by "
        "--order-seed); the last two find tests that depend on what ran before them",
    )
    parser.addoption("--order-seed", type=int, default=None, help="seed of --order random")


def pytest_configure(config):
    # The tests' own Playwright drivers (the harness's set this themselves) keep their compiled
    # code, as the product's do.
    keep_node_compiled()
    # Every xdist worker must collect the same order: the controller picks the seed once and
    # the workers, started after this, inherit it.
    if config.getoption("order") == "random" and not hasattr(config, "workerinput"):
        seed = config.getoption("order_seed")
        os.environ["NEWSBENCH_ORDER_SEED"] = str(
            seed if seed is not None else random.randrange(1_000_000)
        )


def pytest_collection_finish(session):
    # What is imported and collected by now lives as long as the worker: frozen out of the
    # collector's reach, and young collections made rarer (the default, one per 700 net
    # allocations, ran 3,400 times in 420 tests). Measured: the collector's CPU in those 420
    # tests (tests/core/{analytics,scoring}, one worker) 12.2 -> 5.8 s; the quick subset
    # (-m 'not heavy', four workers) 281/269 -> 246/229 s of CPU, 171/161 -> 150/141 s wall.
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


def pytest_report_header(config):
    if config.getoption("order") == "random":
        return f"test order: random, --order-seed {os.environ['NEWSBENCH_ORDER_SEED']}"
    return f"test order: {config.getoption('order')}"


def pytest_terminal_summary(terminalreporter, config):
    # Again at the end, where -q shows it too: the seed repeats a failing order.
    if config.getoption("order") == "random":
        terminalreporter.write_line(pytest_report_header(config))


def pytest_collection_modifyitems(config, items):
    """By default files marked `heavy(seconds)` first, longest first, then the rest in their
    order: the workers start on the longest files, and the short ones fill in at the end."""
    order = config.getoption("order")
    if order == "heavy-first":

        def weight(item) -> float:
            mark = item.get_closest_marker("heavy")
            return -(mark.args[0] if mark and mark.args else 0)

        items.sort(key=weight)
        return
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(str(item.path), []).append(item)
    groups = list(files.values())
    if order == "reverse":
        groups.reverse()
    else:
        rng = random.Random(int(os.environ["NEWSBENCH_ORDER_SEED"]))
        rng.shuffle(groups)
        for group in groups:
            rng.shuffle(group)
    items[:] = [item for group in groups for item in group]


@pytest.fixture(scope="module", autouse=True)
def no_dagster_context_left_open(request):
    """Fails the test file that leaves a Dagster sensor, schedule or resource context open.

    Such a context entered a DagsterInstance, which set Dagster's current definitions-state
    storage (a context variable holding the instance only weakly). Whenever the garbage
    collector finalizes the context, that variable is reset to the storage of the instance
    that was current when it opened (by then a closed `instance_for_test()`), and the next
    file to load Definitions fails on "Attempted to resolve undefined DagsterInstance weakref"
    in a test that had nothing to do with it. Collecting here makes the leak show now, in the
    file that caused it. Open contexts with `with build_sensor_context(...) as context:`."""
    yield
    base = sys.modules.get("dagster._core.storage.defs_state.base")
    if base is None:  # this worker never loaded Dagster's instance code
        return
    gc.collect()
    # What outlived the file (session fixtures, caches, what its tests imported) is frozen
    # too, so the next file's collection walks only what that file left: these collections
    # took 26.3 s of CPU over a run of the suite, 2.4 s with the freeze.
    gc.freeze()
    storage = base.DefsStateStorage.get()
    if storage is not None:
        base._current_storage.set(None)  # the next file starts clean
        pytest.fail(
            f"{request.node.nodeid} left a Dagster context open: the current defs-state "
            "storage is still set after the file ended (open sensor/schedule contexts with "
            "`with build_sensor_context(...) as context:`)",
            pytrace=False,
        )


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
