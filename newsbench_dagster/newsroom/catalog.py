"""The catalog of sites: what each fictional news site is (host, language, template family,
schedule, shares of quirks and paywalls, redesigns), validated when catalog.yaml is loaded."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_CATALOG = PACKAGE_DIR / "catalog.yaml"
TEMPLATES_DIR = PACKAGE_DIR / "templates"

TEMPLATE_FAMILIES = ("classic", "grid", "magazine")
FEED_KINDS = ("rss", "atom")
QUIRKS = ("missing_jsonld", "og_site_prefix", "og_differs", "byline_is_site", "malformed_jsonld")
REGIONS = ("eu", "us", "ca", "uk", "other")


@dataclass(frozen=True)
class Drift:
    """A redesign: from local date `on`, the site serves its family's template `version`."""

    on: date
    version: int


@dataclass(frozen=True)
class SiteSpec:
    key: str
    host: str
    name: str
    language: str
    timezone: str
    template: str
    feed_kind: str
    feed_path: str
    story_interval_minutes: int
    lead_rotation_minutes: int
    sections: tuple[str, ...]
    tagline: str = ""
    # Display names for sections whose slug is not simply title-cased (accents etc.).
    section_labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    region: str = "us"
    crawl_delay: float = 0.2
    paywall_share: float = 0.0
    free_articles: int = 1
    factbox_share: float = 0.35  # share of articles with a fact box ("Key facts")
    adversarial: bool = False
    amp: bool = False
    short_links: bool = False
    liveblog_hours: tuple[int, int] = (6, 23)
    quirks: Mapping[str, float] = field(default_factory=dict, hash=False)
    drifts: tuple[Drift, ...] = ()

    @property
    def origin(self) -> str:
        return f"http://{self.host}"

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def section_label(self, section: str) -> str:
        return self.section_labels.get(section, section.title())

    def version_on(self, day: date) -> int:
        """The template version in force on a local date (1 before any redesign)."""
        version = 1
        for drift in self.drifts:
            if day >= drift.on:
                version = drift.version
        return version

    @classmethod
    def from_dict(
        cls, raw: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
    ) -> SiteSpec:
        merged = {**(defaults or {}), **raw}
        key = str(merged.get("key", "?"))

        def need(name: str) -> Any:
            if name not in merged:
                raise ValueError(f"site {key}: missing field {name!r}")
            return merged[name]

        quirks = {**(defaults or {}).get("quirks", {}), **(raw.get("quirks") or {})}
        hours = tuple(int(h) for h in merged.get("liveblog_hours", (6, 23)))
        drifts = tuple(
            sorted(
                (
                    Drift(date.fromisoformat(str(d["date"])), int(d["version"]))
                    for d in merged.get("drifts") or ()
                ),
                key=lambda d: d.on,
            )
        )
        spec = cls(
            key=key,
            host=str(need("host")).lower(),
            name=str(need("name")),
            language=str(need("language")),
            timezone=str(need("timezone")),
            template=str(need("template")),
            feed_kind=str(need("feed_kind")),
            feed_path=str(need("feed_path")),
            story_interval_minutes=int(need("story_interval_minutes")),
            lead_rotation_minutes=int(need("lead_rotation_minutes")),
            sections=tuple(str(s) for s in need("sections")),
            tagline=str(merged.get("tagline", "")),
            section_labels=dict(merged.get("section_labels") or {}),
            region=str(merged.get("region", "us")).lower(),
            crawl_delay=float(merged.get("crawl_delay", 0.2)),
            paywall_share=float(merged.get("paywall_share", 0.0)),
            free_articles=int(merged.get("free_articles", 1)),
            factbox_share=float(merged.get("factbox_share", 0.35)),
            adversarial=bool(merged.get("adversarial", False)),
            amp=bool(merged.get("amp", False)),
            short_links=bool(merged.get("short_links", False)),
            liveblog_hours=(hours[0], hours[1]),
            quirks={str(k): float(v) for k, v in quirks.items()},
            drifts=drifts,
        )
        # Fail at load time rather than on the first request.
        if spec.template not in TEMPLATE_FAMILIES:
            raise ValueError(f"site {spec.key}: unknown template {spec.template!r}")
        if spec.feed_kind not in FEED_KINDS:
            raise ValueError(f"site {spec.key}: unknown feed kind {spec.feed_kind!r}")
        if spec.story_interval_minutes < 2 or spec.lead_rotation_minutes < 1:
            raise ValueError(f"site {spec.key}: intervals too small")
        if spec.story_interval_minutes < 2 * spec.lead_rotation_minutes:
            # At most one new story per rotation window keeps "each window, a new lead" true.
            raise ValueError(
                f"site {spec.key}: story_interval_minutes must be at least twice "
                "lead_rotation_minutes"
            )
        if not spec.sections:
            raise ValueError(f"site {spec.key}: no sections")
        if spec.region not in REGIONS:
            raise ValueError(f"site {spec.key}: unknown region {spec.region!r}")
        if unknown := set(spec.quirks) - set(QUIRKS):
            raise ValueError(f"site {spec.key}: unknown quirks {sorted(unknown)}")
        shares = (spec.paywall_share, spec.factbox_share)
        if sum(spec.quirks.values()) > 1 or not all(0 <= share <= 1 for share in shares):
            raise ValueError(f"site {spec.key}: shares must lie in [0, 1]")
        if not 0 <= hours[0] < hours[1] <= 24:
            raise ValueError(f"site {spec.key}: liveblog_hours must be 0 <= start < end <= 24")
        ZoneInfo(spec.timezone)  # raises for an unknown zone
        return spec
