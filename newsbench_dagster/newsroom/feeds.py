"""What crawlers and feed readers fetch from a site: its RSS or Atom feed, the Google News
sitemap and robots.txt. Each is a pure function of (site, instant)."""

from __future__ import annotations

from datetime import datetime, timedelta
from email.utils import format_datetime
from typing import Any
from zoneinfo import ZoneInfo

from lxml import etree

from .clock import as_utc
from .site_world import FEED_SIZE, SiteWorld
from .templating import PRIVATE_PREFIX, Times

SITEMAP_PATH = "/sitemap-news.xml"
SITEMAP_WINDOW = timedelta(hours=48)

NS_DC = "http://purl.org/dc/elements/1.1/"
NS_ATOM = "http://www.w3.org/2005/Atom"
NS_SITEMAP = "http://www.sitemaps.org/schemas/sitemap/0.9"
NS_NEWS = "http://www.google.com/schemas/sitemap-news/0.9"


def rfc822(at: datetime, tz: ZoneInfo) -> str:
    return format_datetime(at.astimezone(tz))


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
        f"Crawl-delay: {site.spec.crawl_delay}\n"
        f"Disallow: {PRIVATE_PREFIX}/\n"
        "Disallow: /api/\n"
        "\n"
        f"Sitemap: {site.url(SITEMAP_PATH)}\n"
    )
