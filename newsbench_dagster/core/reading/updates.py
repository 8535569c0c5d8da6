"""What changed on a page after it was published: live-blog updates (JSON-LD liveBlogUpdate
and the entries visible on the page, pinned ones marked) and correction notices."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urldefrag

from newsbench_dagster.core.reading.page_reader import (
    LOWERCASE,
    PageReader,
    as_list,
    clean,
    first,
    visible_text,
)
from newsbench_dagster.core.reading.page_record import Correction, LiveUpdate
from newsbench_dagster.core.reading.timestamps import human_time, machine_time

_PIN_LABEL = re.compile(r"📌|^\s*(?:pinned|épinglé|angeheftet|angepinnt|fixiert)\b", re.IGNORECASE)
_CORRECTION_WORDS = ("correction", "korrektur", "rectificatif", "erratum")
_NOT_CONTENT = {"a", "button", "form", "input", "link", "meta", "script", "style", "template"}


def _fragment(value: Any) -> str | None:
    """An entry's id: "https://x.test/live#post-3" and "post-3" name the same entry."""
    if not isinstance(value, str) or not value.strip():
        return None
    return urldefrag(value.strip()).fragment or value.strip()


def read_live_updates(
    blog: dict | None, pinned_ids: set[str], resolve: Any
) -> Iterable[LiveUpdate]:
    """The liveBlogUpdate entries of a JSON-LD LiveBlogPosting (pinned when the page pins the
    entry with that id)."""
    for update in as_list(blog.get("liveBlogUpdate") if blog else None):
        update = resolve(update)
        if not isinstance(update, dict):
            continue
        uid = _fragment(update.get("@id") or update.get("url") or update.get("identifier"))
        when = update.get("datePublished") or update.get("dateModified")
        text = " ".join(
            t for k in ("headline", "articleBody") if (t := clean(first(update.get(k))))
        )
        yield LiveUpdate(
            id=uid,
            time=machine_time(when, "jsonld") if when else None,
            text=text,
            pinned=uid in pinned_ids,
            source="jsonld",
        )


def looks_live(doc: Any) -> bool:
    """Whether the page's markup says it is a live blog (its visible entries are then read)."""
    return bool(doc.xpath("//*[contains(@class, 'liveblog') or contains(@class, 'live-entry')][1]"))


def read_live_entries(r: PageReader) -> Iterable[LiveUpdate]:
    """The live-blog entries visible on the page: the innermost timed (or pinned) blocks."""
    found = r.doc.xpath(
        "//*[self::article or self::li or self::div or self::section]"
        "[@data-pinned or contains(@class, 'entry') or contains(@class, 'post')"
        " or contains(@class, 'update')][.//time or @data-pinned]"
    )
    chosen = set(found)
    # Innermost: a feed of entries contains entries, an entry's text block does not.
    for el in (e for e in found if not any(d in chosen for d in e.iterdescendants())):
        labels = [
            visible_text(x)
            for x in el.xpath(".//*[contains(@class, 'label') or contains(@class, 'badge')]")
        ]
        pinned = (
            el.get("data-pinned", "").lower() not in ("", "false", "0")
            or "pinned" in (el.get("class") or "").lower()
            or any(_PIN_LABEL.search(t) for t in labels)
        )
        time = first(el.xpath(".//time[@datetime]"))
        yield LiveUpdate(
            id=_fragment(el.get("id") or el.get("data-entry-id")),
            time=machine_time(time.get("datetime"), "page") if time is not None else None,
            text=visible_text(el, skip_tags=("time",), skip_classes=("label", "badge")),
            pinned=pinned,
            source="page",
        )


def read_corrections(r: PageReader, language: str | None) -> list[Correction]:
    """Correction notices: the innermost elements whose class or id says "correction" (in
    en/de/fr), each with the time beside it."""
    test = " or ".join(
        f"contains({LOWERCASE.format('@' + a)}, '{w}')"
        for a in ("class", "id")
        for w in _CORRECTION_WORDS
    )
    found = [e for e in r.doc.xpath(f"//*[{test}]") if e.tag not in _NOT_CONTENT]
    chosen = set(found)
    out = []
    # Innermost modules: a corrections list holds one per item, a box holds its note. The
    # time may sit beside the note, in an enclosing module.
    for el in (e for e in found if not any(d in chosen for d in e.iterdescendants())):
        text = visible_text(el, skip_tags=("time", "h1", "h2", "h3", "h4", "h5", "h6"))
        if not text:
            continue
        scopes = [el, *(a for a in el.iterancestors() if a in chosen)]
        time = next((t for s in scopes for t in s.xpath(".//time")[:1]), None)
        stamp = None
        if time is not None:
            stamp = machine_time(time.get("datetime"), "time[datetime]") or human_time(
                visible_text(time), language, "text"
            )
        out.append(Correction(text=text, time=stamp))
    return out
