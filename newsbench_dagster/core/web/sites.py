"""The site allowlist (`sites.yaml`): the only sites Newsbench polls and lets agents visit.

It is reviewed configuration, so the Dagster `site` partitions are built from it.
Nothing here knows whether a site is simulated or real.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from newsbench_dagster.core.config_file import load_config
from newsbench_dagster.core.errors import ConfigError

FeedKind = Literal["rss", "atom", "jsonfeed", "sitemap"]
Geo = Literal["US", "EU", "UK", "CA", "IN", "AU", "ANY"]


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of a URL, lower-cased; the unit of the egress allowlist."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


class Feed(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str
    kind: FeedKind


class RateLimit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Minimum spacing between two requests of the producer to one host.
    min_interval_seconds: float = Field(default=1.0, ge=0)


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid")
    automated_access: Literal["permitted", "opt_in", "api_only"] = "permitted"
    allow_paywalled: bool = False


class Site(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str = Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")
    name: str
    home: str
    feeds: list[Feed] = Field(min_length=1)
    languages: list[str] = Field(min_length=1)
    geo: Geo = "ANY"
    origins: list[str] = Field(default_factory=list)
    rate_limit: RateLimit = RateLimit()
    policy: Policy = Policy()

    @field_validator("home")
    @classmethod
    def _absolute(cls, v: str) -> str:
        if urlsplit(v).scheme not in ("http", "https") or not urlsplit(v).netloc:
            raise ValueError(f"home must be an absolute http(s) URL, got {v!r}")
        return v

    @property
    def language(self) -> str:
        return self.languages[0]

    @property
    def allowed_origins(self) -> list[str]:
        """Origins agents may load for this site: its home origin plus any declared extras."""
        found = [origin_of(self.home), *(origin_of(o) for o in self.origins)]
        return list(dict.fromkeys(found))

    def min_intervals(self) -> dict[str, float]:
        """origin -> the spacing the site asks for between two page loads there."""
        return {o: self.rate_limit.min_interval_seconds for o in self.allowed_origins}


class SiteRegistry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sites: list[Site] = Field(min_length=1)

    @field_validator("sites")
    @classmethod
    def _unique_keys(cls, sites: list[Site]) -> list[Site]:
        keys = [s.key for s in sites]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise ValueError(f"duplicate site keys: {', '.join(dupes)}")
        return sites

    @property
    def keys(self) -> list[str]:
        return [s.key for s in self.sites]

    def get(self, key: str) -> Site:
        for site in self.sites:
            if site.key == key:
                return site
        raise KeyError(f"site {key!r} is not in the allowlist (known: {', '.join(self.keys)})")

    @property
    def allowed_origins(self) -> set[str]:
        return {o for s in self.sites for o in s.allowed_origins}

    def min_intervals(self) -> dict[str, float]:
        """origin -> page-load spacing, for every allowlisted site (the pool's pacing)."""
        return {o: gap for s in self.sites for o, gap in s.min_intervals().items()}

    def partner_of(self, key: str) -> Site:
        """The site a `compare_outlets` task pairs `key` with: the next one on the list."""
        keys = self.keys
        return self.sites[(keys.index(self.get(key).key) + 1) % len(keys)]


def load_sites(path: str | Path) -> SiteRegistry:
    """Read and validate a sites file; errors name the file and the offending field."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: sites file not found")
    return load_config(path, SiteRegistry)
