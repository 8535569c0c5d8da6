"""Whether a recorded page is a bot wall / CAPTCHA challenge (a recording of the wall, not of
the site) rather than a page that merely carries a challenge widget.

A challenge page says so where a reader looks (its title or main heading: "Just a moment...",
"Attention Required!", "Verify you are human"), or its main content is the challenge (a
visible CAPTCHA widget or iframe, a challenge script) with little other text. A widget that
is hidden (display:none, the `hidden` attribute, a class a stylesheet hides, the invisible
reCAPTCHA badge, `data-size="invisible"`), or a comment form's CAPTCHA on a page full of
article text, is not a challenge page.
"""

from __future__ import annotations

import re

from lxml import etree

from newsbench_dagster.core.reading.page_bytes import parse_html

# What a challenge page's title or main heading says.
_CHALLENGE_HEADING = re.compile(
    r"(just a moment|attention required|verify you are (a )?human|are you a (ro)?bot|"
    r"checking (if the site connection is secure|your browser)|security check|one more step|"
    r"access denied|pardon our interruption|please verify you are|human verification|"
    r"ddos protection|captcha)",
    re.I,
)
# What a challenge page's text asks of its reader.
_CHALLENGE_TEXT = re.compile(
    r"(verify you are (a )?human|are you a robot|unusual traffic from your computer|"
    r"complete the security check|checking your browser before|enable javascript and cookies "
    r"to continue|press (&|and) hold)",
    re.I,
)
# Challenge widgets (elements with these classes, iframes and scripts from these sources).
_WIDGET_CLASS = re.compile(r"(^|\s)(g-recaptcha|h-captcha|cf-turnstile|cf-challenge)(\s|$)")
_WIDGET_SRC = re.compile(
    r"(google\.com/recaptcha|recaptcha\.net|hcaptcha\.com|challenges\.cloudflare\.com|"
    r"captcha-delivery\.com|px-captcha|/cdn-cgi/challenge-platform/h/|cf_chl_)",
    re.I,
)
_HIDDEN_STYLE = re.compile(r"(display\s*:\s*none|visibility\s*:\s*hidden)", re.I)
_CSS_HIDDEN_RULE = re.compile(
    r"([^{}]+)\{[^}]*(?:display\s*:\s*none|visibility\s*:\s*hidden)[^}]*\}", re.I
)
_NOT_TEXT = ("script", "style", "noscript", "template", "head")
# A challenge page has a few dozen words; a page whose widget is its main content is short.
LITTLE_TEXT_WORDS = 150


def _hidden_selectors(doc) -> tuple[set[str], set[str]]:
    """Classes and ids the page's own stylesheets hide (`.grecaptcha-badge {visibility:
    hidden}`): simple selectors only."""
    classes, ids = {"grecaptcha-badge"}, set()
    for style in doc.iter("style"):
        for m in _CSS_HIDDEN_RULE.finditer(style.text or ""):
            for sel in m.group(1).split(","):
                last = sel.strip().split()[-1] if sel.strip() else ""
                classes |= set(re.findall(r"\.([\w-]+)", last))
                ids |= set(re.findall(r"#([\w-]+)", last))
    return classes, ids


def _hidden(el, classes: set[str], ids: set[str]) -> bool:
    """Whether `el` or an ancestor is hidden from the reader."""
    while el is not None:
        if not isinstance(el.tag, str):
            el = el.getparent()
            continue
        if el.get("hidden") is not None or el.get("data-size") == "invisible":
            return True
        if _HIDDEN_STYLE.search(el.get("style") or ""):
            return True
        if el.get("type", "").lower() == "hidden" or el.get("id") in ids:
            return True
        if set((el.get("class") or "").split()) & classes:
            return True
        el = el.getparent()
    return False


def _visible_words(doc, classes: set[str], ids: set[str]) -> int:
    body = doc.find(".//body")
    root = body if body is not None else doc
    words = 0
    for el in root.iter():
        if not isinstance(el.tag, str) or el.tag in _NOT_TEXT:
            continue
        if el.text and not _hidden(el, classes, ids):
            words += len(el.text.split())
        parent = el.getparent()
        if (
            el.tail
            and parent is not None
            and parent.tag not in _NOT_TEXT
            and not _hidden(parent, classes, ids)
        ):
            words += len(el.tail.split())
    return words


def _in_comment_form(el) -> bool:
    """A CAPTCHA guarding a form the reader writes in (a comment, a newsletter signup)."""
    while el is not None:
        if el.tag == "form":
            return el.find(".//textarea") is not None or el.find(".//input") is not None
        el = el.getparent()
    return False


def bot_check(html: str) -> str | None:
    """Why `html` is a challenge page (None: it is not)."""
    if not html.strip():
        return None
    try:
        doc = parse_html(html)
    except (etree.ParserError, ValueError):
        return None
    classes, ids = _hidden_selectors(doc)
    title = " ".join((doc.findtext(".//title") or "").split())
    headings = [
        " ".join(h.text_content().split())
        for h in doc.iter("h1", "h2")
        if not _hidden(h, classes, ids)
    ]
    heading = next((t for t in [title, *headings[:3]] if t and _CHALLENGE_HEADING.search(t)), None)
    widget = None
    for el in doc.iter():
        if not isinstance(el.tag, str):
            continue
        if el.tag in ("iframe", "script"):
            marker = _WIDGET_SRC.search(el.get("src") or "")
            if marker and not (el.tag == "iframe" and _hidden(el, classes, ids)):
                widget = widget or f"{el.tag} from {marker.group(0)}"
        elif (
            (m := _WIDGET_CLASS.search(el.get("class") or ""))
            and not _hidden(el, classes, ids)
            and not _in_comment_form(el)
        ):
            widget = widget or f"visible {m.group(2)}"
    words = _visible_words(doc, classes, ids)
    body = doc.find(".//body")
    text = " ".join((body.text_content() if body is not None else "").split())[:5000]
    asks = _CHALLENGE_TEXT.search(text) if words < LITTLE_TEXT_WORDS else None
    if heading and (widget or asks or words < LITTLE_TEXT_WORDS):
        return f"challenge page titled {heading[:80]!r}"
    if widget and words < LITTLE_TEXT_WORDS and (asks or not headings or heading):
        return f"challenge page: {widget}, {words} words of text"
    if asks:
        return f"challenge page: {asks.group(0)!r}, {words} words of text"
    return None
