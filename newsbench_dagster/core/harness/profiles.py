"""Environment profiles: the device, place and network a run's browser pretends to have.

The profiles are data (`profiles.yaml`, package data); a task picks them by name through
`constraints.device_profile`, `constraints.geo` and `constraints.network`. `resolve` turns a
task's constraints (and the run's seed) into one concrete `EnvProfile`, which knows how to
configure a Playwright context, its request headers, and each page's network throttling.

Randomisation (`resolve(..., randomize=True)`): each dimension the task leaves open (no
`device_profile`, no `network`, no `geo` or `geo: ANY`) is drawn from that dimension's pool in
`random_pools`, with a random generator seeded by (seed, dimension), so the same seed gives the
same profile and pinning one dimension does not change what the others draw. A dimension the
task pins is never drawn.
"""

from __future__ import annotations

import random
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from newsbench_dagster.core.config_file import load_config, parse_config
from newsbench_dagster.core.errors import ConfigError, InvalidTask
from newsbench_dagster.core.tasks.contract import task_schema

# The newsroom's geo signal (newsroom/exchange.py GEO_HEADER); kept here as a string so core
# code does not import the simulator.
GEO_HEADER = "x-newsroom-geo"
ANY_GEO = "ANY"

# Dimension -> the task constraint that pins it.
CONSTRAINT_KEYS = {"device": "device_profile", "geo": "geo", "network": "network"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Size(_Strict):
    width: int = Field(gt=0)
    height: int = Field(gt=0)


class DeviceProfile(_Strict):
    viewport: Size
    screen: Size | None = None
    device_scale_factor: float = Field(gt=0)
    is_mobile: bool
    has_touch: bool
    user_agent: str = Field(min_length=1)


class Geolocation(_Strict):
    latitude: float = Field(ge=-90, le=90)
    longitude: float = Field(ge=-180, le=180)


class GeoProfile(_Strict):
    locale: str = Field(min_length=2)
    timezone_id: str = Field(min_length=1)
    geolocation: Geolocation
    newsroom_geo: str = Field(min_length=1)


class NetworkProfile(_Strict):
    """No figures means no throttling; throughputs are bytes per second (CDP's unit)."""

    latency_ms: float | None = Field(default=None, ge=0)
    download_bytes_per_s: float | None = Field(default=None, gt=0)
    upload_bytes_per_s: float | None = Field(default=None, gt=0)

    @property
    def throttled(self) -> bool:
        return any(
            v is not None
            for v in (self.latency_ms, self.download_bytes_per_s, self.upload_bytes_per_s)
        )

    def cdp_conditions(self) -> dict[str, Any]:
        # -1 disables a throughput limit in Network.emulateNetworkConditions.
        return {
            "offline": False,
            "latency": self.latency_ms or 0,
            "downloadThroughput": self.download_bytes_per_s or -1,
            "uploadThroughput": self.upload_bytes_per_s or -1,
        }


class Choice(_Strict):
    device: str
    geo: str
    network: str


class EnvProfile(_Strict):
    """One concrete environment: what a run's browser context looks like from outside."""

    device_name: str
    geo_name: str
    network_name: str
    device: DeviceProfile
    geo: GeoProfile
    network: NetworkProfile
    drawn: tuple[str, ...] = ()  # dimensions drawn from the seed rather than set
    language: str | None = None  # the task's language: the reader reads the site's language

    @property
    def locale(self) -> str:
        """The geo's locale, unless the task is in another language (a French site read from
        the EU geo is read in French, not in the geo's German)."""
        lang, locale = self.language, self.geo.locale
        if lang and locale.split("-")[0].lower() != lang.lower():
            return lang
        return locale

    def context_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for Playwright's `browser.new_context(**kwargs)`."""
        d, g = self.device, self.geo
        kwargs: dict[str, Any] = {
            "viewport": d.viewport.model_dump(),
            "device_scale_factor": d.device_scale_factor,
            "is_mobile": d.is_mobile,
            "has_touch": d.has_touch,
            "user_agent": d.user_agent,
            "locale": self.locale,
            "timezone_id": g.timezone_id,
            "geolocation": g.geolocation.model_dump(),
            "permissions": ["geolocation"],
        }
        if d.screen is not None:
            kwargs["screen"] = d.screen.model_dump()
        return kwargs

    def extra_headers(self) -> dict[str, str]:
        """Headers to merge into the context's extra HTTP headers. No Accept-Language: the
        context's `locale` sets it, and overrides any extra header of that name."""
        return {GEO_HEADER: self.geo.newsroom_geo}

    async def apply(self, page: Any) -> Any:
        """Throttle one page's network over CDP; a no-op (None) when unthrottled.

        Returns the CDP session: throttling lasts as long as it stays attached."""
        if not self.network.throttled:
            return None
        session = await page.context.new_cdp_session(page)
        await session.send("Network.enable")
        await session.send("Network.emulateNetworkConditions", self.network.cdp_conditions())
        return session

    def manifest(self) -> dict[str, Any]:
        """Names and concrete values, for the run's environment manifest: what the context
        was built with (context_kwargs), plus what the network and the newsroom were told."""
        n = self.network
        context = self.context_kwargs()
        context.pop("permissions", None)
        return {
            "device": self.device_name,
            "geo": self.geo_name,
            "network": self.network_name,
            "drawn": list(self.drawn),
            **context,
            "screen": context.get("screen"),
            "accept_language": self.locale,  # what Chromium sends (see extra_headers)
            "newsroom_geo": self.geo.newsroom_geo,
            "network_throttled": n.throttled,
            "latency_ms": n.latency_ms,
            "download_bytes_per_s": n.download_bytes_per_s,
            "upload_bytes_per_s": n.upload_bytes_per_s,
        }


class ProfileCatalog(_Strict):
    defaults: Choice
    random_pools: dict[str, list[str]]
    devices: dict[str, DeviceProfile]
    geos: dict[str, GeoProfile]
    networks: dict[str, NetworkProfile]

    def _table(self, dimension: str) -> dict[str, Any]:
        return {"device": self.devices, "geo": self.geos, "network": self.networks}[dimension]

    @model_validator(mode="after")
    def _names_exist(self) -> ProfileCatalog:
        problems = []
        for dim in CONSTRAINT_KEYS:
            known = self._table(dim)
            default = getattr(self.defaults, dim)
            if default not in known:
                problems.append(f"defaults.{dim}: unknown {dim} profile {default!r}")
            for name in self.random_pools.get(dim, []):
                if name not in known:
                    problems.append(f"random_pools.{dim}: unknown {dim} profile {name!r}")
        for dim in set(self.random_pools) - set(CONSTRAINT_KEYS):
            problems.append(f"random_pools.{dim}: unknown dimension ({sorted(CONSTRAINT_KEYS)})")
        # The task schema is the contract: every value it allows needs a profile.
        props = task_schema()["properties"]["constraints"]["properties"]
        for dim, key in CONSTRAINT_KEYS.items():
            for value in props[key]["enum"]:
                if value != ANY_GEO and value not in self._table(dim):
                    problems.append(f"{dim}s: no profile for task value {key}={value!r}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def resolve(
        self, constraints: dict[str, Any] | None, seed: int, *, randomize: bool = False
    ) -> EnvProfile:
        """The environment a task's constraints ask for; open dimensions get the default, or
        with `randomize` a draw from their pool seeded by (seed, dimension)."""
        constraints = constraints or {}
        chosen: dict[str, str] = {}
        drawn: list[str] = []
        for dim, key in CONSTRAINT_KEYS.items():
            value = constraints.get(key)
            if value is not None and value != ANY_GEO:
                if value not in self._table(dim):
                    raise InvalidTask(
                        f"constraints.{key}: unknown {dim} profile {value!r} "
                        f"(known: {sorted(self._table(dim))})"
                    )
                chosen[dim] = value
            elif randomize and self.random_pools.get(dim):
                # A string seed hashes the same in every process (unlike hash()).
                chosen[dim] = random.Random(f"{seed}:{dim}").choice(self.random_pools[dim])
                drawn.append(dim)
            else:
                chosen[dim] = getattr(self.defaults, dim)
        return EnvProfile(
            device_name=chosen["device"],
            geo_name=chosen["geo"],
            network_name=chosen["network"],
            device=self.devices[chosen["device"]],
            geo=self.geos[chosen["geo"]],
            network=self.networks[chosen["network"]],
            drawn=tuple(drawn),
            language=constraints.get("language"),
        )


def load_profiles(path: str | Path | None = None) -> ProfileCatalog:
    """Read and validate a profiles file (default: the packaged profiles.yaml); errors name the
    file and the offending field."""
    if path is None:
        return _packaged()
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: profiles file not found")
    return load_config(path, ProfileCatalog)


@cache
def _packaged() -> ProfileCatalog:
    res = resources.files("newsbench_dagster.core.harness").joinpath("profiles.yaml")
    return _parse(res.read_text(encoding="utf-8"), str(res))


def _parse(text: str, where: str) -> ProfileCatalog:
    return parse_config(text, where, ProfileCatalog)
