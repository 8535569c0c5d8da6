"""An article's fact box ("Key facts", "Auf einen Blick", "L'essentiel"): its title and its
entries (label and value) from a definition list, a table, a list or labelled paragraphs."""

from __future__ import annotations

import re
from itertools import islice
from typing import Any

from newsbench_dagster.core.reading.page_reader import (
    HEADING,
    LOWERCASE,
    PageReader,
    clean,
    visible_text,
)
from newsbench_dagster.core.reading.page_record import Fact

# Fact boxes: what their class or id says, or what their own heading or caption reads.
FACTBOX_CLASS_WORDS = (
    "factbox",
    "fact-box",
    "fact_box",
    "infobox",
    "info-box",
    "key-facts",
    "keyfacts",
    "key_facts",
    "key-points",
    "keypoints",
    "key_points",
    "fakten",
    "essentiel",
)
FACTBOX_TITLE = re.compile(
    r"(?:the\s+)?(?:key|quick|fast|main)\s+(?:facts|points)|(?:the\s+)?facts?(?:\s*box)?"
    r"|fact\s*(?:box|file|sheet)|(?:facts\s+)?at\s+a\s+glance|in\s+brief"
    r"|auf\s+einen\s+blick|(?:die\s+)?(?:wichtigsten\s+)?fakten|faktenbox|das\s+wichtigste"
    r"(?:\s+in\s+kürze)?|in\s+kürze|steckbrief"
    r"|l'essentiel|en\s+bref|rep[èe]res|(?:les\s+)?chiffres[\s-]cl[ée]s|en\s+chiffres"
    r"|ce\s+qu'il\s+faut\s+(?:retenir|savoir)",
    re.IGNORECASE,
)
_FACT_TRAIL = re.compile(r"[\s:：]+$")
_FACT_LEAD = re.compile(r"^[\s:：]+")
_LABEL_TAGS = {"strong", "b", "dfn", "em", "span", "dt", "label", "th"}
_BOX_TAGS = {"aside", "section", "div", "figure", "table"}
_TITLE_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6", "caption", "figcaption", "legend", "summary"}
_TITLE_TAGS |= {"p", "strong", "b", "span"}  # "<p><strong>Key facts</strong></p>"
_LIST_TAGS = {"dl", "table", "ul", "ol"}


def _fact_text(text: str, *, label: bool) -> str:
    text = clean(text.replace("\xa0", " "))
    return _FACT_TRAIL.sub("", text) if label else _FACT_LEAD.sub("", text)


def _title_text(el: Any) -> str:
    return _fact_text(visible_text(el).replace("\u2019", "'"), label=True)


def _dl_facts(dl: Any) -> list[Fact]:
    facts: list[Fact] = []
    label: str | None = None
    values: list[str] = []

    def close() -> None:
        if label and values:
            facts.append(Fact(label, ", ".join(values)))

    for el in dl.iter("dt", "dd"):
        if el.tag == "dt":
            close()
            label, values = _fact_text(visible_text(el), label=True), []
        elif label and (value := _fact_text(visible_text(el), label=False)):
            values.append(value)
    close()
    return facts


def _table_facts(table: Any) -> list[Fact]:
    facts = []
    for row in table.iter("tr"):
        cells = [c for c in row if isinstance(c.tag, str) and c.tag in ("th", "td")]
        if len(cells) < 2 or all(c.tag == "th" for c in cells):
            continue  # a header row, or a row that is not label + value
        label = _fact_text(visible_text(cells[0]), label=True)
        value = _fact_text(" ".join(visible_text(c) for c in cells[1:]), label=False)
        if label and value:
            facts.append(Fact(label, value))
    return facts


def _item_fact(item: Any) -> Fact | None:
    """ "<strong>Label:</strong> value", "<b>Label</b> value" or "Label: value"."""
    children = [c for c in item if isinstance(c.tag, str)]
    first = children[0] if children else None
    if first is not None and not (item.text or "").strip() and first.tag in _LABEL_TAGS:
        label = _fact_text(visible_text(first), label=True)
        rest = [first.tail or ""]
        for c in children[1:]:
            rest += [visible_text(c), c.tail or ""]
        value = _fact_text(" ".join(rest), label=False)
        if label and value and len(label) <= 60:
            return Fact(label, value)
    text = clean(visible_text(item).replace("\xa0", " "))
    head, colon, tail = text.partition(":")
    if colon and head.strip() and len(head) <= 40 and len(head.split()) <= 5:
        value = _fact_text(tail, label=False)
        if value:
            return Fact(_fact_text(head, label=True), value)
    return None


def _facts_in(el: Any) -> list[Fact]:
    """Entries from the first definition list, table or list in `el` that has any; failing
    those, from its paragraphs ("<strong>Label</strong> value")."""
    for source in el.xpath(
        "descendant-or-self::*[self::dl or self::table or self::ul or self::ol]"
    )[:10]:
        if source.tag == "dl":
            facts = _dl_facts(source)
        elif source.tag == "table":
            facts = _table_facts(source)
        else:
            facts = [f for li in source if li.tag == "li" and (f := _item_fact(li))]
        if facts:
            return facts
    return [f for p in el.xpath("./p | ./div") if (f := _item_fact(p))]


def _box_title(box: Any) -> str | None:
    found = box.xpath(
        f"descendant-or-self::*[{HEADING} or self::caption or self::figcaption or self::legend"
        " or self::summary][1]"
    )
    if not found:
        cls = " or ".join(
            f"contains({LOWERCASE.format('@class')}, '{w}')"
            for w in ("title", "titre", "titel", "heading", "kopf")
        )
        found = box.xpath(f"descendant::*[{cls}][not(self::dl or self::ul or self::ol)][1]")
    title = _title_text(found[0]) if found else clean(box.get("aria-label") or "")
    return title or None


def _titled_list(heading: Any) -> Any:
    """What a "Key facts" heading or caption introduces: its table or figure, or the list that
    follows it (the heading's own next siblings, or its wrapper's), bare or in a wrapper."""
    if heading.tag in ("caption", "figcaption", "legend", "summary"):
        return heading.getparent()
    node = heading
    for _ in range(3):
        for sib in islice(node.itersiblings(), 3):
            if not isinstance(sib.tag, str):
                continue
            if sib.tag in _LIST_TAGS:
                return sib
            inner = next((c for c in sib if isinstance(c.tag, str)), None)
            if inner is not None and inner.tag in _LIST_TAGS:
                return sib  # <div class="..."><dl>...</dl></div>
        parent = node.getparent()
        if parent is None or parent.tag in ("main", "article", "body", "html"):
            return None
        node = parent
    return None


def read_factbox(r: PageReader) -> tuple[str | None, tuple[Fact, ...]]:
    """The first fact box on the page (in main first): a box whose class or id says so, or a
    heading/caption that reads like "Key facts" over a list, table or definition list."""
    # One pass in document order (an XPath with translate() per attribute costs seconds on a
    # 10 MB page).
    candidates: list[tuple[Any, Any, int]] = []
    for el in r.doc.iter(*_BOX_TAGS, *_TITLE_TAGS):
        tag = el.tag
        if tag in _BOX_TAGS:
            words = f"{el.get('class') or ''} {el.get('id') or ''}".lower()
            if words.strip() and any(w in words for w in FACTBOX_CLASS_WORDS):
                candidates.append((el, None, 1))
                continue
        if tag in _BOX_TAGS and el.get("role") != "heading":
            continue
        text = "".join(t for t in el.itertext() if isinstance(t, str))
        title = _fact_text(text.replace("\u2019", "'"), label=True) if len(text) < 80 else ""
        if title and FACTBOX_TITLE.fullmatch(title):
            candidates.append((el, _titled_list(el), 2))
    main = r.main

    def outside_main(c: tuple[Any, Any, int]) -> bool:
        return main is None or not (c[0] is main or main in c[0].iterancestors())

    candidates.sort(key=outside_main)  # in main first; stable, so in document order
    for el, source, need in candidates[:200]:
        if any(a.tag in ("nav", "footer") for a in el.iterancestors()):
            continue
        if need == 1:
            facts = _facts_in(el)
            title = _box_title(el)
        else:
            facts = _facts_in(source) if source is not None else []
            title = _title_text(el)
        if len(facts) >= need:
            return title, tuple(facts[:50])
    return None, ()
