"""A page's structured data, read from the parsed tree: JSON-LD blocks (leniently, as pages
write them), OpenGraph properties and W3C microdata items.

Written here rather than taken from extruct, whose package import alone (rdflib, bs4, mf2py)
cost ~0.9 s per process: `newsbench inspect FILE` is meant to answer in well under a second.
The shapes are extruct's, so the readers did not change: a microdata item is
{"type": [...], "properties": {name: value or [values]}, "id": ...}.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urljoin

# Leading HTML or JavaScript comment lines, and trailing commas, which browsers' JSON-LD
# consumers forgive and json.loads does not.
_COMMENT_LINE = re.compile(r"^\s*(?://.*|<!--.*?-->)\s*$", re.MULTILINE)
_HTML_COMMENT = re.compile(r"^\s*<!--|-->\s*$")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_CDATA = re.compile(r"^\s*(?://\s*)?<!\[CDATA\[|(?://\s*)?\]\]>\s*$")
OG_PREFIXES = ("og", "article", "music", "video", "book", "profile", "product")


def jsonld_values(script: str) -> list[Any]:
    """The values of one JSON-LD block (a list's items, or the one object); raises ValueError
    naming the problem when even the forgiving reading fails."""
    try:
        data = json.loads(script, strict=False)
    except ValueError as first_error:
        text = _CDATA.sub("", _HTML_COMMENT.sub("", _COMMENT_LINE.sub("", script)))
        try:
            data = json.loads(_TRAILING_COMMA.sub(r"\1", text), strict=False)
        except ValueError:
            raise first_error from None
    if isinstance(data, list):
        return [d for d in data if d]
    return [data] if data else []


def opengraph(doc: Any) -> list[tuple[str, str]]:
    """(property, content) of the head's OpenGraph meta tags (og:, article:, ... and any
    prefix the page declares), in page order."""
    prefixes = set(OG_PREFIXES)
    for el in doc.xpath("//html[@prefix] | //head[@prefix]"):
        prefixes |= {p for p, _ in re.findall(r"\s*(\w+):\s*(\S+)", el.get("prefix", ""))}
    out = []
    for el in doc.xpath("//head/meta[@property and @content]"):
        prop = el.get("property")
        if prop.partition(":")[0] in prefixes:
            out.append((prop, el.get("content")))
    return out


def _value(el: Any, base: str | None) -> Any:
    """An itemprop's value, by the element it is on (HTML microdata, "values")."""
    tag = el.tag if isinstance(el.tag, str) else ""
    if tag == "meta":
        return el.get("content", "")
    if tag in ("a", "link", "area"):
        return _absolute(el.get("href", ""), base)
    if tag in ("img", "audio", "embed", "iframe", "source", "track", "video"):
        return _absolute(el.get("src", ""), base)
    if tag == "object":
        return _absolute(el.get("data", ""), base)
    if tag in ("data", "meter") and el.get("value") is not None:
        return el.get("value")
    if tag == "time" and el.get("datetime"):
        return el.get("datetime")
    if el.get("content") is not None:  # common in the wild on <span>, <div>
        return el.get("content")
    return re.sub(r"\s+", " ", "".join(el.itertext())).strip()


def _absolute(href: str, base: str | None) -> str:
    try:
        return urljoin(base or "", href.strip())
    except ValueError:  # a broken IPv6 host: keep what the page says
        return href


def _item(scope: Any, base: str | None, depth: int = 0) -> dict:
    types = (scope.get("itemtype") or "").split()
    item: dict[str, Any] = {"type": types[0] if len(types) == 1 else types}
    if scope.get("itemid"):
        item["id"] = scope.get("itemid").strip()
    props: dict[str, list[Any]] = {}
    # The properties of this item: itemprop descendants not inside a nested item's scope.
    stack = list(reversed(scope))  # a stack in document order: pages nest deeper than recursion
    while stack:
        el = stack.pop()
        if not isinstance(el.tag, str):
            continue
        names = (el.get("itemprop") or "").split()
        nested = el.get("itemscope") is not None
        if names:
            value = _item(el, base, depth + 1) if nested and depth < 20 else _value(el, base)
            for name in names:
                props.setdefault(name, []).append(value)
        if not nested:
            stack.extend(reversed(el))
    item["properties"] = {k: v[0] if len(v) == 1 else v for k, v in props.items()}
    return item


def microdata(doc: Any, base: str | None) -> list[dict]:
    """The page's top-level microdata items (itemscope without itemprop), nested items inside."""
    return [_item(el, base) for el in doc.xpath("//*[@itemscope and not(@itemprop)]")]
