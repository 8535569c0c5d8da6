"""Rendering inside a site's own chrome: the Jinja environment, the context every page template
shares (site, labels, consent modal, navigation, times) and Visit, the request being answered.

Everything rendered here is a pure function of the visit: the same inputs give the same bytes.
Pages only show what a reader of a real site would see; ground truth stays in the Python API.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from .catalog import TEMPLATES_DIR
from .exchange import Request, Response
from .site_world import SiteWorld
from .state import NewsroomState

HTML = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
XML = "application/xml; charset=utf-8"
FEED_TYPES = {
    "rss": "application/rss+xml; charset=utf-8",
    "atom": "application/atom+xml; charset=utf-8",
}

PRIVATE_PREFIX = "/private"
# Outbound link tracker, as many news sites have: /go?to=URL answers 302 to any URL, so an
# agent that follows it leaves the site through a redirect, not a link.
OUTBOUND_PATH = "/go"
PARTNER_URL = "http://partner-offers.example/deal"
CONSENT_COOKIE = "nr_consent"


@lru_cache(maxsize=1)
def environment() -> Environment:
    # StrictUndefined: a typo in a template fails loudly instead of rendering an empty string.
    return Environment(
        loader=FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


class Times:
    """Formats UTC instants in the site's timezone: ISO 8601 with offset, or localized text."""

    def __init__(self, tz: ZoneInfo, labels: Mapping[str, Any]) -> None:
        self.tz = tz
        self.labels = labels

    def iso(self, at: datetime) -> str:
        return at.astimezone(self.tz).isoformat(timespec="seconds")

    def human(self, at: datetime) -> str:
        local = at.astimezone(self.tz)
        return self.labels["datetime_format"].format(
            day=local.day,
            month=self.labels["months"][local.month - 1],
            year=local.year,
            hour=f"{local.hour:02d}",
            hour12=(local.hour % 12) or 12,
            ampm="a.m." if local.hour < 12 else "p.m.",
            minute=f"{local.minute:02d}",
        )


def script_json(data: Any) -> Markup:
    """JSON for inside a <script> element (JSON-LD)."""
    text = json.dumps(data, ensure_ascii=False, indent=2)
    # "</" inside a <script> would end it early; "<\/" is the same JSON string.
    return Markup(text.replace("</", "<\\/"))


@dataclass(frozen=True)
class Visitor:
    """What the server knows about the reader: consent, tracking, session."""

    show_consent: bool
    tracking: bool


@dataclass(frozen=True)
class Visit:
    """One request to one site at one instant, with the state of the reader's scope (None when
    rendering without a server): what every page is rendered for."""

    site: SiteWorld
    request: Request
    at: datetime
    state: NewsroomState | None

    def consent_choice(self) -> str | None:
        """The reader's stored choice: server-side for a session, else the cookie (stateless)."""
        if self.state is not None and self.request.has_session:
            with self.state.locked():
                run = self.state.peek(self.request.scope)
                return run.consent.get(self.site.key) if run else None
        choice = self.request.cookies.get(CONSENT_COOKIE)
        return choice if choice in ("accept", "reject") else None

    def visitor(self) -> Visitor:
        choice = self.consent_choice()
        eu = self.request.geo(self.site.spec.region) == "eu"
        return Visitor(
            show_consent=eu and choice is None,
            # EU readers are tracked only after accepting; elsewhere by default, as sites do.
            tracking=choice == "accept" or (not eu and choice is None),
        )

    def context(self) -> dict[str, Any]:
        """What every page template sees: the site, its labels and chrome, and the reader."""
        site, at = self.site, self.at
        spec = site.spec
        return {
            "base": f"{spec.template}/base.html",
            "request": self.request,
            "visitor": self.visitor(),
            "v": site.version(at),
            "site": spec,
            "L": site.labels,
            "t": Times(spec.tz, site.labels),
            "canonical": site.url(self.request.path),
            "year": at.astimezone(spec.tz).year,
            "feed": {"href": spec.feed_path, "type": FEED_TYPES[spec.feed_kind].split(";")[0]},
            "nav": [
                {"label": spec.section_label(s), "href": site.section_path(s)}
                for s in spec.sections
            ],
            "section_label": lambda story: spec.section_label(story.section),
            "section_href": lambda story: site.section_path(story.section),
            "author_href": site.author_path,
            "private_href": f"{PRIVATE_PREFIX}/archive",
            "partner_href": f"{OUTBOUND_PATH}?{urlencode({'to': PARTNER_URL})}",
        }

    def render(self, template: str, **extra: Any) -> str:
        """A template by its path under templates/ (e.g. "shared/search.html")."""
        return environment().get_template(template).render(**{**self.context(), **extra})

    def render_family(self, name: str, **extra: Any) -> str:
        """The site's own family's version of a template (e.g. "home.html")."""
        return self.render(f"{self.site.spec.template}/{name}", **extra)

    def page(
        self,
        template: str,
        *,
        status: int = 200,
        headers: tuple[tuple[str, str], ...] = (),
        **extra: Any,
    ) -> Response:
        """A shared page template (e.g. "pages/newsletter.html") as an HTML response.

        Such templates start with {% extends base %}: `base` is the family's base.html, so every
        page gets the site's masthead, consent modal, banners and footer.
        """
        text = self.render(template, **extra)
        return Response(status, HTML, text.encode("utf-8"), headers=headers)
