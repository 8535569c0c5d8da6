"""Pages, feeds, sitemaps and robots.txt of one site at one instant.

Everything here is a pure function of (SiteWorld, path, at): the same inputs give the same bytes.
Pages only show what a reader of a real site would see; ground truth stays in the Python API.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from email.utils import format_datetime
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from lxml import etree
from markupsafe import Markup

from . import forms
from .exchange import Request, Response
from .state import NewsroomState
from .world import TEMPLATES_DIR, SiteWorld, Story, as_utc

HTML = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
XML = "application/xml; charset=utf-8"
FEED_TYPES = {
    "rss": "application/rss+xml; charset=utf-8",
    "atom": "application/atom+xml; charset=utf-8",
}

SITEMAP_PATH = "/sitemap-news.xml"
PRIVATE_PREFIX = "/private"
# Outbound link tracker, as many news sites have: /go?to=URL answers 302 to any URL, so an
# agent that follows it leaves the site through a redirect, not a link.
OUTBOUND_PATH = "/go"
PARTNER_URL = "http://partner-offers.example/deal"
FEED_SIZE = 20
SITEMAP_WINDOW = timedelta(hours=48)

NS_DC = "http://purl.org/dc/elements/1.1/"
NS_ATOM = "http://www.w3.org/2005/Atom"
NS_SITEMAP = "http://www.sitemaps.org/schemas/sitemap/0.9"
NS_NEWS = "http://www.google.com/schemas/sitemap-news/0.9"


@lru_cache(maxsize=1)
def _env() -> Environment:
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


def rfc822(at: datetime, tz: ZoneInfo) -> str:
    return format_datetime(at.astimezone(tz))


def _context(
    site: SiteWorld,
    at: datetime,
    path: str,
    request: Request | None = None,
    state: NewsroomState | None = None,
) -> dict[str, Any]:
    spec = site.spec
    return {
        "base": f"{spec.template}/base.html",
        "request": request or Request.build(path),
        "site": spec,
        "L": site.labels,
        "t": Times(spec.tz, site.labels),
        "canonical": site.url(path),
        "year": at.astimezone(spec.tz).year,
        "feed": {"href": spec.feed_path, "type": FEED_TYPES[spec.feed_kind].split(";")[0]},
        "nav": [
            {"label": spec.section_label(s), "href": site.section_path(s)} for s in spec.sections
        ],
        "section_label": lambda story: spec.section_label(story.section),
        "section_href": lambda story: site.section_path(story.section),
        "author_href": site.author_path,
        "private_href": f"{PRIVATE_PREFIX}/archive",
        "partner_href": f"{OUTBOUND_PATH}?{urlencode({'to': PARTNER_URL})}",
    }


def _render(site: SiteWorld, name: str, ctx: dict[str, Any]) -> str:
    return _env().get_template(f"{site.spec.template}/{name}").render(**ctx)


def render_home(site: SiteWorld, at: datetime) -> str:
    front = site.front_page(at)
    ctx = _context(site, at, "/")
    ctx.update(lead=front.lead, others=front.others, most_read=front.most_read)
    return _render(site, "home.html", ctx)


def _json_ld(site: SiteWorld, story: Story, at: datetime) -> Markup:
    t = Times(site.spec.tz, site.labels)
    data = {
        "@context": "https://schema.org",
        "@type": "NewsArticle",
        "headline": story.headline,
        "description": story.summary,
        "author": [{"@type": "Person", "name": name} for name in story.authors],
        "datePublished": t.iso(story.published),
        "dateModified": t.iso(story.modified_at(at)),
        "articleSection": site.spec.section_label(story.section),
        "inLanguage": site.spec.language,
        "mainEntityOfPage": {"@type": "WebPage", "@id": story.url},
        "publisher": {"@type": "Organization", "name": site.spec.name, "url": site.url("/")},
    }
    text = json.dumps(data, ensure_ascii=False, indent=2)
    # "</" inside a <script> would end it early; "<\/" is the same JSON string.
    return Markup(text.replace("</", "<\\/"))


def render_article(site: SiteWorld, story: Story, at: datetime) -> str:
    modified = story.modified_at(at)
    ctx = _context(site, at, story.path)
    ctx.update(
        story=story,
        modified=modified,
        updated=modified > story.published,
        json_ld=_json_ld(site, story, at),
    )
    return _render(site, "article.html", ctx)


def render_listing(
    site: SiteWorld, at: datetime, path: str, title: str, stories: list[Story]
) -> str:
    ctx = _context(site, at, path)
    ctx.update(title=title, stories=stories)
    return _render(site, "listing.html", ctx)


def render_message(site: SiteWorld, at: datetime, path: str, title: str, text: str) -> str:
    ctx = _context(site, at, path)
    ctx.update(title=title, text=text)
    return _render(site, "message.html", ctx)


def _sub(parent: etree._Element, tag: str, text: str | None = None, **attrib: str) -> Any:
    el = etree.SubElement(parent, tag, attrib)
    if text is not None:
        el.text = text
    return el


def _xml(root: etree._Element) -> bytes:
    return etree.tostring(root, xml_declaration=True, encoding="utf-8", pretty_print=True)


def render_feed(site: SiteWorld, at: datetime) -> bytes:
    """RSS 2.0 or Atom 1.0 (per the catalog) with the latest stories."""
    spec = site.spec
    stories = site.stories(at, FEED_SIZE)
    # The feed changes when its content does, not with every tick of the clock.
    last_change = max(s.modified_at(at) for s in stories)
    self_url = site.url(spec.feed_path)
    if spec.feed_kind == "atom":
        t = Times(spec.tz, site.labels)
        feed = etree.Element(f"{{{NS_ATOM}}}feed", nsmap={None: NS_ATOM})
        feed.set("{http://www.w3.org/XML/1998/namespace}lang", spec.language)
        a = f"{{{NS_ATOM}}}"
        _sub(feed, a + "title", spec.name)
        if spec.tagline:
            _sub(feed, a + "subtitle", spec.tagline)
        _sub(feed, a + "id", site.url("/"))
        _sub(feed, a + "updated", t.iso(last_change))
        _sub(feed, a + "link", rel="alternate", type="text/html", href=site.url("/"))
        _sub(feed, a + "link", rel="self", type="application/atom+xml", href=self_url)
        for story in stories:
            entry = _sub(feed, a + "entry")
            _sub(entry, a + "title", story.headline)
            _sub(entry, a + "link", rel="alternate", type="text/html", href=story.url)
            _sub(entry, a + "id", story.url)
            _sub(entry, a + "published", t.iso(story.published))
            _sub(entry, a + "updated", t.iso(story.modified_at(at)))
            for name in story.authors:
                _sub(_sub(entry, a + "author"), a + "name", name)
            _sub(entry, a + "category", term=story.section, label=spec.section_label(story.section))
            _sub(entry, a + "summary", story.summary)
        return _xml(feed)

    rss = etree.Element("rss", version="2.0", nsmap={"dc": NS_DC, "atom": NS_ATOM})
    channel = _sub(rss, "channel")
    _sub(channel, "title", spec.name)
    _sub(channel, "link", site.url("/"))
    _sub(channel, "description", spec.tagline or spec.name)
    _sub(channel, "language", spec.language)
    _sub(channel, "lastBuildDate", rfc822(last_change, spec.tz))
    _sub(channel, f"{{{NS_ATOM}}}link", href=self_url, rel="self", type="application/rss+xml")
    for story in stories:
        item = _sub(channel, "item")
        _sub(item, "title", story.headline)
        _sub(item, "link", story.url)
        _sub(item, "guid", story.url, isPermaLink="true")
        _sub(item, "pubDate", rfc822(story.published, spec.tz))
        _sub(item, "description", story.summary)
        for name in story.authors:
            _sub(item, f"{{{NS_DC}}}creator", name)
        _sub(item, "category", spec.section_label(story.section))
    return _xml(rss)


def render_sitemap(site: SiteWorld, at: datetime) -> bytes:
    """Google News sitemap: the stories of the last 48 hours."""
    spec = site.spec
    t = Times(spec.tz, site.labels)
    urlset = etree.Element(f"{{{NS_SITEMAP}}}urlset", nsmap={None: NS_SITEMAP, "news": NS_NEWS})
    for story in site.stories_since(as_utc(at) - SITEMAP_WINDOW, at):
        url = _sub(urlset, f"{{{NS_SITEMAP}}}url")
        _sub(url, f"{{{NS_SITEMAP}}}loc", story.url)
        _sub(url, f"{{{NS_SITEMAP}}}lastmod", t.iso(story.modified_at(at)))
        news = _sub(url, f"{{{NS_NEWS}}}news")
        publication = _sub(news, f"{{{NS_NEWS}}}publication")
        _sub(publication, f"{{{NS_NEWS}}}name", spec.name)
        _sub(publication, f"{{{NS_NEWS}}}language", spec.language)
        _sub(news, f"{{{NS_NEWS}}}publication_date", t.iso(story.published))
        _sub(news, f"{{{NS_NEWS}}}title", story.headline)
    return _xml(urlset)


def render_robots(site: SiteWorld) -> str:
    return (
        "User-agent: *\n"
        f"Disallow: {PRIVATE_PREFIX}/\n"
        "Disallow: /search\n"
        "\n"
        f"Sitemap: {site.url(SITEMAP_PATH)}\n"
    )


def page(
    site: SiteWorld,
    at: datetime,
    request: Request,
    state: NewsroomState | None,
    template: str,
    *,
    status: int = 200,
    headers: tuple[tuple[str, str], ...] = (),
    **extra: Any,
) -> Response:
    """Render a shared page template (e.g. "pages/newsletter.html") inside the site's own chrome.

    Such templates start with {% extends base %}: `base` is the family's base.html, so every
    page gets the site's masthead, consent modal, banners and footer.
    """
    ctx = _context(site, at, request.path, request, state)
    ctx.update(extra)
    text = _env().get_template(template).render(**ctx)
    return Response(status, HTML, text.encode("utf-8"), headers=headers)


def respond(
    site: SiteWorld,
    request: Request | str,
    at: datetime,
    state: NewsroomState | None = None,
) -> Response:
    """Route one request on this site at instant `at`. A str is a GET of that target."""
    at = as_utc(at)
    if isinstance(request, str):
        request = Request.build(request)
    if (handled := forms.handle(site, request, at, state)) is not None:
        return handled
    if request.method not in ("GET", "HEAD"):
        return Response(405, TEXT, b"method not allowed\n", headers=(("Allow", "GET, HEAD"),))
    return _content(site, request, at, state)


def _content(
    site: SiteWorld, request: Request, at: datetime, state: NewsroomState | None
) -> Response:
    path = request.path
    spec = site.spec
    labels = site.labels

    def html(text: str, status: int = 200, last_modified: datetime | None = None) -> Response:
        return Response(status, HTML, text.encode("utf-8"), last_modified)

    if path == "/":
        return html(render_home(site, at))
    if path == OUTBOUND_PATH and request.arg("to"):
        target = request.arg("to") or ""
        return Response(302, TEXT, f"Redirecting to {target}\n".encode(), location=target)
    if path == "/robots.txt":
        return Response(200, TEXT, render_robots(site).encode("utf-8"))
    if path == spec.feed_path:
        return Response(200, FEED_TYPES[spec.feed_kind], render_feed(site, at))
    if path == SITEMAP_PATH:
        return Response(200, XML, render_sitemap(site, at))
    if path == PRIVATE_PREFIX or path.startswith(PRIVATE_PREFIX + "/"):
        # It exists (robots.txt forbids it); a polite agent never sees it.
        return html(render_message(site, at, path, labels["private_title"], labels["private_text"]))
    if (section := site.section_for_path(path)) is not None:
        title = spec.section_label(section)
        return html(render_listing(site, at, path, title, site.section_stories(section, at)))
    if (author := site.author_for_path(path)) is not None:
        title = labels["author_title"].format(name=author)
        return html(render_listing(site, at, path, title, site.author_stories(author, at)))
    if (story := site.story_for_path(path, at)) is not None:
        return html(render_article(site, story, at), last_modified=story.modified_at(at))
    return html(
        render_message(site, at, path, labels["not_found_title"], labels["not_found_text"]),
        status=404,
    )
