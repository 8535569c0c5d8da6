"""Reading a live page's metadata and landmarks in one round trip.

Used by the agents' `get_metadata` tool and by the harness's own observation. JSON-LD is
returned as raw text and parsed in Python, so a malformed block is recorded, not dropped.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

# The document as Playwright's `page.content()` serialises it, in one evaluation of the main
# world (`content()` runs in a utility world whose creation costs ~30 ms per document, measured).
DOCUMENT_HTML_JS = (
    "() => { const d = document.doctype, e = document.documentElement;"
    " return (d ? new XMLSerializer().serializeToString(d) : '') + (e ? e.outerHTML : ''); }"
)

# Runs in the page; kept as a .js file so it can be read and linted as JavaScript.
PAGE_METADATA_JS = (
    resources.files("newsbench_dagster.core.reading")
    .joinpath("page_metadata.js")
    .read_text("utf-8")
)


def flatten_jsonld(value: Any, into: list[dict] | None = None) -> list[dict]:
    """The typed nodes of one parsed JSON-LD value, flattening lists and `@graph`."""
    nodes = [] if into is None else into
    if isinstance(value, list):
        for v in value:
            flatten_jsonld(v, nodes)
    elif isinstance(value, dict):
        if "@graph" in value:
            flatten_jsonld(value["@graph"], nodes)
        if "@type" in value:
            nodes.append(value)
    return nodes


def parse_jsonld(blocks: list[str]) -> tuple[list[dict], list[str]]:
    """Parsed JSON-LD nodes (flattening lists and `@graph`) and the errors of bad blocks."""
    nodes: list[dict] = []
    errors: list[str] = []
    for i, raw in enumerate(blocks):
        try:
            flatten_jsonld(json.loads(raw), nodes)
        except (json.JSONDecodeError, TypeError) as e:
            errors.append(f"JSON-LD block {i}: {e}")
    return nodes, errors


def node_types(node: dict) -> set[str]:
    t = node.get("@type")
    return set(t) if isinstance(t, list) else {t} if isinstance(t, str) else set()


ARTICLE_TYPES = {
    "Article",
    "NewsArticle",
    "ReportageNewsArticle",
    "ReportageNews",
    "AnalysisNewsArticle",
    "OpinionNewsArticle",
    "BackgroundNewsArticle",
    "ReviewNewsArticle",
    "LiveBlogPosting",
    "BlogPosting",
}


def article_nodes(nodes: list[dict]) -> list[dict]:
    return [n for n in nodes if node_types(n) & ARTICLE_TYPES]


def person_names(value: Any) -> list[str]:
    """Names from a JSON-LD `author` value: a string, a Person/Organization, or a list of them."""
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, dict):
        name = value.get("name")
        return [name.strip()] if isinstance(name, str) and name.strip() else []
    if isinstance(value, list):
        return [n for v in value for n in person_names(v)]
    return []


# The page's metadata and its document in one evaluation (a look at the page the harness
# observes, and the agent's reading tools, share): each round trip to a page that is still busy
# loading waits for its main thread (measured: ~25 ms right after DOMContentLoaded).
DOM_READ_JS = (
    "() => { const meta = (" + PAGE_METADATA_JS + ")();"
    " meta.html = (" + DOCUMENT_HTML_JS + ")(); return meta; }"
)
