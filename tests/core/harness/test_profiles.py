"""Environment profiles: data in, a real Chromium context that looks like the profile out."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from playwright.async_api import async_playwright

from newsbench_dagster.core.errors import ConfigError, InvalidTask
from newsbench_dagster.core.harness.profiles import EnvProfile, load_profiles
from tests.support.paths import REPO

HOME = "http://harbor-herald.test/"  # a US site: only the reader's geo brings the consent modal
SITEMAP = HOME + "sitemap-news.xml"  # ~40 kB
SECURE = "https://profiles.test/"


@pytest.fixture(scope="module")
def catalog():
    return load_profiles()


@pytest.fixture(scope="module")
def run(browser_options):
    """One Chromium for the module, driven from sync tests: run(coro_fn) -> result, where
    coro_fn(browser) is awaited on the module's event loop."""
    loop = asyncio.new_event_loop()
    pw = loop.run_until_complete(async_playwright().start())
    browser = loop.run_until_complete(pw.chromium.launch(**browser_options.launch_kwargs()))
    yield lambda fn: loop.run_until_complete(fn(browser))
    loop.run_until_complete(browser.close())
    loop.run_until_complete(pw.stop())
    loop.close()


async def _page(browser, env: EnvProfile):
    """A context built as the runner will build it: profile kwargs, extra headers, apply()."""
    context = await browser.new_context(**env.context_kwargs(), service_workers="block")
    await context.set_extra_http_headers(env.extra_headers())
    page = await context.new_page()
    await env.apply(page)
    return context, page


def test_defaults_and_any_geo(catalog):
    env = catalog.resolve({}, seed=1)
    assert (env.device_name, env.geo_name, env.network_name) == ("desktop", "US", "wifi")
    assert catalog.resolve({"geo": "ANY"}, seed=1).geo_name == "US"
    assert catalog.resolve(None, seed=1).drawn == ()
    m = catalog.resolve({"device_profile": "mobile", "network": "4g"}, seed=1).manifest()
    assert m["viewport"] == {"width": 412, "height": 839} and m["device_scale_factor"] == 2.625
    assert (m["latency_ms"], m["download_bytes_per_s"]) == (165, 1012500)


def test_unknown_constraint_value_is_named(catalog):
    with pytest.raises(InvalidTask, match=r"constraints\.network: unknown network profile '5g'"):
        catalog.resolve({"network": "5g"}, seed=1)


def test_device_profiles_in_chromium(catalog, run, newsroom):
    probe = "() => [innerWidth, devicePixelRatio, navigator.userAgent, 'ontouchstart' in window]"

    async def check(browser):
        out = {}
        for device in ("mobile", "desktop"):
            context, page = await _page(browser, catalog.resolve({"device_profile": device}, 1))
            await page.goto(HOME, wait_until="domcontentloaded")
            out[device] = await page.evaluate(probe)
            await context.close()
        return out

    seen = run(check)
    mobile, desktop = catalog.devices["mobile"], catalog.devices["desktop"]
    assert seen["mobile"] == [412, 2.625, mobile.user_agent, True]
    assert seen["desktop"] == [1366, 1, desktop.user_agent, False]
    assert "Mobile" in seen["mobile"][2] and "Mobile" not in seen["desktop"][2]


def test_geo_profiles_in_chromium(catalog, run, newsroom):
    probe = """async () => {
        const pos = await new Promise((ok, fail) =>
            navigator.geolocation.getCurrentPosition(ok, e => fail(new Error(e.message))));
        return [Intl.DateTimeFormat().resolvedOptions().timeZone, navigator.language,
                pos.coords.latitude, pos.coords.longitude];
    }"""

    async def check(browser):
        out = {}
        for geo in ("EU", "US"):
            context, page = await _page(browser, catalog.resolve({"geo": geo}, 1))
            # Geolocation needs a secure context, which the newsroom's http hosts are not: ask
            # from an https page the context serves itself.
            await context.route(SECURE, lambda r: r.fulfill(body="<p/>", content_type="text/html"))
            await page.goto(SECURE)
            out[geo] = await page.evaluate(probe)
            async with page.expect_request(HOME) as sent:
                await page.goto(HOME, wait_until="domcontentloaded")
            headers = await (await sent.value).all_headers()
            out[geo] += [headers["x-newsroom-geo"], headers["accept-language"]]
            out[geo].append(await page.locator("#consent").count())
            out[geo].append(await page.evaluate("() => navigator.language"))
            await context.close()
        return out

    seen = run(check)
    assert seen["EU"] == ["Europe/Berlin", "de-DE", 52.52, 13.405, "eu", "de-DE", 1, "de-DE"]
    assert seen["US"] == ["America/New_York", "en-US", 40.7128, -74.006, "us", "en-US", 0, "en-US"]


def test_3g_throttling_slows_a_transfer(catalog, run, newsroom):
    fetch = """async url => {
        const t0 = performance.now();
        const body = await (await fetch(url, {cache: 'no-store'})).arrayBuffer();
        return [(performance.now() - t0) / 1000, body.byteLength];
    }"""

    async def timed(browser, network):
        env = catalog.resolve({"network": network}, 1)
        context = await browser.new_context(**env.context_kwargs(), service_workers="block")
        # The runner routes every request; throttling must survive interception.
        await context.route("**/*", lambda route: route.continue_())
        page = await context.new_page()
        await page.goto(HOME, wait_until="domcontentloaded")  # unthrottled: only the fetch counts
        session = await env.apply(page)
        result = await page.evaluate(fetch, SITEMAP)
        await context.close()
        return result, session

    (wifi_s, size), wifi_session = run(lambda b: timed(b, "wifi"))
    (slow_s, _), slow_session = run(lambda b: timed(b, "3g"))
    assert wifi_session is None and slow_session is not None  # a CDP session only to throttle
    assert size > 30_000
    # The profile's latency plus size / download rate, with a generous margin; with only the
    # latency applied (no bandwidth limit) it would fall short. Loopback alone takes ms.
    net = catalog.networks["3g"]
    expected = net.latency_ms / 1000 + size / net.download_bytes_per_s
    assert slow_s > 0.75 * expected > 2.0, (slow_s, size)
    assert slow_s > wifi_s + 1.0, (slow_s, wifi_s)


def test_seeded_randomisation(catalog):
    def names(env):
        return (env.device_name, env.geo_name, env.network_name)

    draws = [names(catalog.resolve({"geo": "ANY"}, seed, randomize=True)) for seed in range(40)]
    again = [names(catalog.resolve({"geo": "ANY"}, seed, randomize=True)) for seed in range(40)]
    assert draws == again
    for i, dim in enumerate(("device", "geo", "network")):
        assert {d[i] for d in draws} == set(catalog.random_pools[dim]), dim
    env = catalog.resolve({}, 3, randomize=True)
    assert env.drawn == ("device", "geo", "network") and env.manifest()["drawn"] == list(env.drawn)

    pinned = {"device_profile": "mobile", "geo": "EU", "network": "3g"}
    for seed in range(40):
        env = catalog.resolve(pinned, seed, randomize=True)
        assert names(env) == ("mobile", "EU", "3g") and env.drawn == ()
        # Pinning one dimension leaves the others' draws as they were.
        part = catalog.resolve({"geo": "EU"}, seed, randomize=True)
        assert (part.device_name, part.network_name) == (draws[seed][0], draws[seed][2])
    assert {names(catalog.resolve({}, s)) for s in range(10)} == {("desktop", "US", "wifi")}


@pytest.fixture
def packaged_raw():
    return yaml.safe_load((REPO / "newsbench_dagster/core/harness/profiles.yaml").read_text())


def _write(tmp_path, data) -> Path:
    path = tmp_path / "profiles.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def test_bad_profiles_rejected_clearly(tmp_path, packaged_raw):
    path = _write(tmp_path, "devices: [unclosed\n")
    with pytest.raises(ConfigError, match=rf"{path}:2: not valid YAML"):
        load_profiles(path)

    raw = dict(packaged_raw, devices=dict(packaged_raw["devices"]))
    raw["devices"]["mobile"] = dict(raw["devices"]["mobile"], colour="blue")
    with pytest.raises(ConfigError, match=r"devices\.mobile\.colour: Extra inputs"):
        load_profiles(_write(tmp_path, raw))

    raw = dict(packaged_raw, networks={"wifi": {}, "4g": {}})
    with pytest.raises(ConfigError, match=r"no profile for task value network='3g'"):
        load_profiles(_write(tmp_path, raw))

    raw = dict(packaged_raw, random_pools={"geo": ["US", "Mars"]})
    with pytest.raises(ConfigError, match=r"random_pools\.geo: unknown geo profile 'Mars'"):
        load_profiles(_write(tmp_path, raw))

    raw = dict(packaged_raw, networks=dict(packaged_raw["networks"], lte={"latency_ms": -5}))
    with pytest.raises(ConfigError, match=r"networks\.lte\.latency_ms"):
        load_profiles(_write(tmp_path, raw))

    with pytest.raises(ConfigError, match="profiles file not found"):
        load_profiles(tmp_path / "missing.yaml")


def test_adding_a_profile_is_a_yaml_edit(tmp_path, packaged_raw, catalog):
    raw = dict(packaged_raw, networks=dict(packaged_raw["networks"], satellite={"latency_ms": 600}))
    env = load_profiles(_write(tmp_path, raw)).resolve({"network": "satellite"}, 1)
    assert env.network.throttled and env.network.cdp_conditions()["downloadThroughput"] == -1
    assert env.manifest()["latency_ms"] == 600
