"""A small command-line browser agent, as the `command` adapter runs one.

    python examples/cdp_agent.py --cdp-url URL --answer-file F --prompt P --url U

It attaches to the run's Chromium over CDP, finds the harness's page (the one on --url), reads
what the page says about itself (JSON-LD, then meta tags, then the visible page), writes a
JSON answer to --answer-file and disconnects. It answers the lead story of a front page
({"headline", "url"}) or the metadata of an article ({"headline", "authors", "published",
"modified"}), whichever the page is, unless --intent says which.

Misbehaving on purpose, for tests:
    --sleep N         hang N seconds while attached (a stuck agent)
    --close-browser   send CDP Browser.close before leaving (a client that shuts down the
                      browser it was lent, like Browser Use with keep_alive=False)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

# Everything the answer needs, read in one round trip.
READ_JS = """() => {
  const meta = (key) => {
    const el = document.querySelector(`meta[property="${key}"], meta[name="${key}"]`);
    return el ? el.getAttribute('content') : null;
  };
  const jsonld = [];
  for (const s of document.querySelectorAll('script[type="application/ld+json"]')) {
    try { jsonld.push(JSON.parse(s.textContent)); } catch (e) { /* malformed: skip it */ }
  }
  const main = document.querySelector('main') || document.body;
  const lead = main.querySelector('article :is(h1, h2, h3) a[href]');
  const h1 = main.querySelector('h1');
  return {
    url: location.href,
    og_type: meta('og:type'),
    published: meta('article:published_time'),
    modified: meta('article:modified_time'),
    h1: h1 ? h1.innerText.trim() : null,
    bylines: [...main.querySelectorAll('a[rel="author"]')].map(a => a.innerText.trim()),
    lead: lead ? {headline: lead.innerText.trim(), url: lead.href} : null,
    jsonld,
  };
}"""


def _nodes(jsonld: list) -> list[dict]:
    out: list[dict] = []
    for block in jsonld:
        items = block.get("@graph", [block]) if isinstance(block, dict) else block
        out += [n for n in items if isinstance(n, dict)] if isinstance(items, list) else []
    return out


def _has_type(node: dict, name: str) -> bool:
    kind = node.get("@type")
    return name in (kind if isinstance(kind, list) else [kind])


def top_headline(seen: dict) -> dict[str, Any]:
    """The lead: the front page's ItemList names it; else the first story link under main."""
    for node in _nodes(seen["jsonld"]):
        items = node.get("itemListElement") if _has_type(node, "ItemList") else None
        if isinstance(items, list) and items and isinstance(items[0], dict):
            first = items[0]
            item = first.get("item") if isinstance(first.get("item"), dict) else {}
            name, url = first.get("name") or item.get("name"), first.get("url") or item.get("url")
            if name and url:
                return {"headline": name, "url": url}
    return seen["lead"] or {"headline": None, "url": None}


def article_metadata(seen: dict) -> dict[str, Any]:
    article = next(
        (n for n in _nodes(seen["jsonld"]) if any(_has_type(n, t) for t in ARTICLE_TYPES)), {}
    )
    authors = article.get("author") or []
    authors = authors if isinstance(authors, list) else [authors]
    names = [a.get("name") if isinstance(a, dict) else a for a in authors]
    names = [n for n in names if isinstance(n, str) and n] or seen["bylines"]
    return {
        # The visible headline first: og:title and JSON-LD are sometimes shortened SEO titles.
        "headline": seen["h1"] or article.get("headline"),
        "authors": names,
        "published": seen["published"] or article.get("datePublished"),
        "modified": seen["modified"] or article.get("dateModified"),
    }


ARTICLE_TYPES = ("NewsArticle", "Article", "ReportageNewsArticle")


def find_page(pages: list[Page], url: str) -> Page:
    """The harness's page: the one on the entry URL, else the first open one."""
    for page in pages:
        if page.url.rstrip("/") == url.rstrip("/"):
            return page
    if not pages:
        raise SystemExit("no page to work on: the browser has no open tab")
    return pages[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cdp-url", required=True)
    ap.add_argument("--answer-file", required=True, type=Path)
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--intent", choices=("find_top_headline", "extract_article_metadata"))
    ap.add_argument("--sleep", type=float, default=0.0)
    ap.add_argument("--close-browser", action="store_true")
    args = ap.parse_args(argv)

    print(f"task: {args.prompt}", flush=True)
    # Logged so a test can see an environment variable reach the agent (and be redacted).
    if os.environ.get("EXAMPLE_AGENT_TOKEN"):
        print(f"using token {os.environ['EXAMPLE_AGENT_TOKEN']}", flush=True)
    with sync_playwright() as pw:
        browser = pw.chromium.connect_over_cdp(args.cdp_url)
        pages = [p for c in browser.contexts for p in c.pages]
        page = find_page(pages, args.url)
        print(f"attached to {page.url}", flush=True)
        if args.sleep:
            time.sleep(args.sleep)
        seen = page.evaluate(READ_JS)
        intent = args.intent or (
            "extract_article_metadata" if seen["og_type"] == "article" else "find_top_headline"
        )
        answer = top_headline(seen) if intent == "find_top_headline" else article_metadata(seen)
        # Written whole, then renamed: the harness never reads half an answer.
        tmp = args.answer_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(answer), encoding="utf-8")
        tmp.replace(args.answer_file)
        print(f"answered {intent}", flush=True)
        if args.close_browser:
            cdp = browser.new_browser_cdp_session()
            cdp.send("Browser.close")
        browser.close()  # over CDP: disconnects, leaves the harness's browser running
    return 0


if __name__ == "__main__":
    sys.exit(main())
