"""The whole simulated news web for one seed: every site of the catalog, as a function of time.

Nothing here reads the real clock or keeps state that changes over time: every story, front page
and timestamp is derived from the seed, the site spec, the vocabulary and the instant asked about.
All randomness comes from hashlib (seeding.py), so results are identical across processes and
Python runs. Ground truth for tests and benchmarks is read through Newsroom.truth().
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from functools import cached_property
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from .catalog import DEFAULT_CATALOG, PACKAGE_DIR, TEMPLATES_DIR, SiteSpec
from .clock import as_utc
from .site_world import SiteWorld
from .truth import SiteTruth, site_truth

DEFAULT_SEED = 7  # the world every default run and every test sees


class Newsroom:
    """All sites of the simulated news web for one seed."""

    def __init__(self, seed: int = DEFAULT_SEED, catalog_path: str | Path | None = None) -> None:
        self.seed = seed
        self.catalog_path = Path(catalog_path) if catalog_path else DEFAULT_CATALOG
        catalog = yaml.safe_load(self.catalog_path.read_text(encoding="utf-8"))
        self.vocab_path = self.catalog_path.parent / catalog.get("vocab", "vocab.yaml")
        vocab = yaml.safe_load(self.vocab_path.read_text(encoding="utf-8"))
        self.epoch = as_utc(datetime.fromisoformat(str(catalog["epoch"]).replace("Z", "+00:00")))
        defaults = catalog.get("defaults") or {}
        self.sites: list[SiteSpec] = [SiteSpec.from_dict(raw, defaults) for raw in catalog["sites"]]

        self._worlds: dict[str, SiteWorld] = {}
        self._by_host: dict[str, SiteWorld] = {}
        for spec in self.sites:
            if spec.key in self._worlds or spec.host in self._by_host:
                raise ValueError(f"duplicate site key or host: {spec.key} / {spec.host}")
            if spec.language not in vocab:
                raise ValueError(f"site {spec.key}: no vocabulary for language {spec.language!r}")
            world = SiteWorld(spec, seed, self.epoch, vocab[spec.language])
            self._worlds[spec.key] = world
            self._by_host[spec.host] = world

    def __repr__(self) -> str:
        return f"Newsroom(seed={self.seed}, sites={[s.key for s in self.sites]})"

    def site(self, key: str) -> SiteWorld:
        """The site with this key; KeyError if there is none."""
        return self._worlds[key]

    def site_for_host(self, host: str) -> SiteWorld | None:
        """The site served at this host ('Harbor-Herald.test:80' works too); None if unknown."""
        hostname = urlsplit(f"//{host.strip()}").hostname or ""
        return self._by_host.get(hostname.rstrip(".").lower())

    @cached_property
    def revision(self) -> str:
        """A short hash of everything that shapes content, so it changes when content changes."""
        files = [self.catalog_path, self.vocab_path, *sorted(PACKAGE_DIR.glob("*.py"))]
        files += sorted(PACKAGE_DIR.glob("*.yaml")) + sorted(TEMPLATES_DIR.rglob("*.html"))
        digest = hashlib.sha256()
        for path in files:
            if path.is_file():
                digest.update(path.name.encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()[:12]

    def truth(self, key: str, at: datetime) -> SiteTruth:
        """What the site shows at `at`, for tests and benchmarks; checkers never read this."""
        return site_truth(self.site(key), at)
