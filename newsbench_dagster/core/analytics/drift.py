"""The drift gate: did a site change under us, and did the baseline notice?

Per site and day three signals are read:

* the front page's **template fingerprint**, a hash of its layout skeleton (landmarks,
  containers and headings with their normalised class names), blind to content: headlines,
  links, dates, numbers, how many story cards there are, and the slots that come and go by
  the hour or by reader (ads, sponsored promos, consent dialogs, banners, trackers);
* the **feed volume**: today's item count against the site's recent days (a robust z-score);
* the **baseline's success** (the main-channel agents) against its previous day.

A site is *drifted*, and excluded from gating until the baseline is re-established, when the
baseline's success fell by more than `drop` on a day the template changed or the volume was
anomalous, and it stays drifted until the baseline is back within `drop` of its level before
the change. A change that the baseline weathered is flagged, not excluded.

Pure: no dagster, no I/O. The asset (`defs/drift/assets.py`) fetches the page, keeps the
per-site history and calls these functions.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
import statistics
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from typing import Any

import lxml.html
from lxml import etree

# ---------------------------------------------------------------------------------------------
# Template fingerprint


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Elements that make a page's layout: landmarks, containers, lists, headings, paragraphs, forms.
# Inline elements (links, spans, times, images, buttons...) are content; they are looked
# through (a container inside a link still counts) but not recorded.
STRUCTURAL = _names(
    "html body header nav main aside footer section article div figure figcaption ul ol li "
    "dl dt dd table thead tbody tfoot tr h1 h2 h3 h4 h5 h6 p form fieldset blockquote "
    "details summary dialog address hgroup search"
)
# Never layout: scripts, styles, embeds and metadata.
IGNORED = _names("script style noscript template iframe svg canvas link meta head")
# Slots that appear by the hour or by reader, whatever the template: ads, sponsored promos,
# consent dialogs, app banners, trackers. Matched against the dash/underscore-separated words
# of class names and ids.
VOLATILE_WORDS = _names(
    "ad ads advert adverts advertisement sponsor sponsored promo promoted consent cookie "
    "cookies gdpr banner tracker tracking pixel outbrain taboola"
)
VOLATILE_ROLES = frozenset({"dialog", "alertdialog"})
# State classes a server may toggle on the same template (the current nav item, an open menu).
STATE_CLASSES = frozenset({"active", "current", "selected", "open", "closed", "hidden"})
_WORDS = re.compile(r"[-_]+")
_DIGITS = re.compile(r"\d+")


def _words(token: str) -> set[str]:
    return {w for w in _WORDS.split(token.lower()) if w}


def _volatile(el: Any) -> bool:
    attrs = el.attrib
    if any(k.startswith(("data-ad", "data-sponsor")) for k in attrs):
        return True
    if attrs.get("role", "").lower() in VOLATILE_ROLES or attrs.get("aria-modal") == "true":
        return True
    tokens = attrs.get("class", "").split() + attrs.get("id", "").split()
    return any(_words(t) & VOLATILE_WORDS for t in tokens)


def _class_token(token: str) -> str | None:
    """A class name without its numbers (`card-3` and `card-12` are one class), or None for
    a state class or a name that was only a number."""
    token = token.lower()
    if token in STATE_CLASSES or token.startswith(("is-", "has-")):
        return None
    token = _DIGITS.sub("", token).strip("-_")
    return token or None


def _label(el: Any) -> str:
    classes = sorted({c for t in el.attrib.get("class", "").split() if (c := _class_token(t))})
    label = el.tag + "".join(f".{c}" for c in classes)
    ident = el.attrib.get("id", "")
    if ident and not any(ch.isdigit() for ch in ident):
        label += f"#{ident.lower()}"
    if role := el.attrib.get("role"):
        label += f"[{role.lower()}]"
    return label


def _children(el: Any) -> list[str]:
    """Skeletons of the structural elements directly under `el` (looking through inline
    elements), with runs of identical siblings collapsed to one: ten story cards and twelve
    are the same template."""
    out: list[str] = []
    for child in el:
        if not isinstance(child.tag, str):  # comments, processing instructions
            continue
        tag = child.tag.lower()
        if tag in IGNORED or _volatile(child):
            continue
        found = [_skeleton(child)] if tag in STRUCTURAL else _children(child)
        for sig in found:
            if not out or out[-1] != sig:
                out.append(sig)
    return out


def _skeleton(el: Any) -> str:
    inner = _children(el)
    return _label(el) + (f"({','.join(inner)})" if inner else "")


def _root(html: str | bytes) -> Any | None:
    if isinstance(html, str):
        # lxml refuses str input that declares its encoding; bytes it decodes itself.
        html = html.encode("utf-8")
    if not html.strip():
        return None
    try:
        doc = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        return None
    body = doc.find("body")
    return body if body is not None else doc


def template_skeleton(html: str | bytes) -> str:
    """The layout skeleton a fingerprint hashes, readable (e.g. for a reason or a diff):
    `body.classic(header.masthead(p.tagline,nav.primary-nav(ul(li))),...)`."""
    root = _root(html)
    return "" if root is None else _skeleton(root)


def template_fingerprint(html: str | bytes) -> str:
    """A structural hash of a page's layout, ignoring its content.

    Kept: the tree of landmarks, containers, lists, headings and paragraphs under <body>, each
    with its class names (numbers removed, state classes dropped, sorted), its id if it has
    no digits and its role. Ignored: text, links and every inline element (looked through),
    attributes other than class/id/role, <head>, scripts and styles, how many times a sibling
    repeats (story cards), and ad / promo / consent / banner / tracker slots. Stable across
    loads of the same template at any hour; changes when the markup of the template does.
    Empty string for an empty or unparsable page.
    """
    skeleton = template_skeleton(html)
    if not skeleton:
        return ""
    return hashlib.sha256(skeleton.encode("utf-8")).hexdigest()[:16]


# ---------------------------------------------------------------------------------------------
# Feed volume


def volume_anomaly(
    today: int, history: list[int], z: float = 3.0, min_history: int = 3
) -> tuple[float | None, float | None, float | None, bool]:
    """(mean, std, z-score, anomalous) of today's item count against earlier days' counts.

    The standard deviation is floored at max(1, 10 % of the mean): feeds of a few items a day,
    or perfectly regular ones, would otherwise make any difference of one item "anomalous".
    With fewer than `min_history` earlier days nothing is anomalous (mean and std are still
    reported when there is any history; z only once there is enough).
    """
    past = [int(h) for h in history if h is not None]
    if not past:
        return None, None, None, False
    mean = statistics.fmean(past)
    spread = statistics.stdev(past) if len(past) > 1 else 0.0
    std = max(spread, 1.0, 0.1 * abs(mean))
    if len(past) < min_history:
        return mean, std, None, False
    score = (today - mean) / std
    return mean, std, score, abs(score) > z


# ---------------------------------------------------------------------------------------------
# Assessment


def feed_volume(feed_items: Iterable[Mapping[str, Any]]) -> int:
    """Items the site's feeds and sitemaps listed (the homepage's links are not feed volume)."""
    return sum(1 for r in feed_items if r.get("item_url") and r.get("kind") != "homepage")


def baseline_success(run_scores: Iterable[Mapping[str, Any]], versions: list[str]) -> float | None:
    """Success rate of the main-channel agents over the scored (not excluded) runs; None
    when there is none."""
    scored = [
        bool(r["success"])
        for r in run_scores
        if r.get("agent_version") in versions
        and not r.get("excluded")
        and r.get("success") is not None
    ]
    return sum(scored) / len(scored) if scored else None


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


def _pp(x: float) -> str:
    return f"{x * 100:+.0f} pp"


def _day(value: date | datetime | str) -> str:
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return str(value)[:10]


def assess(
    site: str,
    day: date | datetime | str,
    fingerprint: str | None,
    previous_fingerprint: str | None,
    feed_items: int | None,
    feed_history: list[int],
    baseline_version: str | None,
    baseline_success: float | None,
    baseline_previous_success: float | None,
    drop: float = 0.10,
    *,
    previous: Mapping[str, Any] | None = None,
    z: float = 3.0,
    min_history: int = 3,
    checked_at: datetime | None = None,
) -> dict:
    """One `site_drift` row for a site and day.

    * `template_changed`: both fingerprints are known and differ;
    * `volume_anomaly`: today's feed items against `feed_history` (see `volume_anomaly`);
    * `baseline_delta`: today's baseline success minus its previous day's (same version);
    * `drifted`: the baseline fell by more than `drop` (absolute: 0.10 is 10 points) on a day
      with a template change or a volume anomaly; or `previous` (the site's last assessed
      day, a row this function returned or its `history_entry`) was drifted and the baseline
      is not yet back within `drop` of its level before that change;
    * `reasons`: plain sentences naming the site and the numbers.

    Besides the table's columns the row carries `pre_change_success`, the baseline level a
    drifted site must recover to; the next day's assessment reads it from `previous`.
    """
    day_s = _day(day)
    reasons: list[str] = []
    changed = bool(fingerprint and previous_fingerprint and fingerprint != previous_fingerprint)
    if changed:
        reasons.append(
            f"{site}: the front page template changed on {day_s} "
            f"(fingerprint {previous_fingerprint} -> {fingerprint})."
        )
    elif not fingerprint:
        reasons.append(f"{site}: the front page could not be read on {day_s}; no fingerprint.")

    mean, std, score, anomalous = (
        volume_anomaly(feed_items, feed_history, z, min_history)
        if feed_items is not None
        else (None, None, None, False)
    )
    if anomalous:
        reasons.append(
            f"{site}: {feed_items} feed items on {day_s} against {mean:.1f} ± {std:.1f} a day "
            f"over the previous {len(feed_history)} days (z = {score:+.1f})."
        )

    delta = (
        baseline_success - baseline_previous_success
        if baseline_success is not None and baseline_previous_success is not None
        else None
    )
    fell = delta is not None and delta < -drop
    who = f"the baseline ({baseline_version})" if baseline_version else "the baseline"
    was_drifted = bool(previous and previous.get("drifted"))
    pre_change = previous.get("pre_change_success") if was_drifted and previous else None

    drifted = False
    if (changed or anomalous) and fell:
        drifted = True
        # A new change while still drifted keeps the level from before the first one.
        pre_change = pre_change if pre_change is not None else baseline_previous_success
        what = "template change" if changed else "feed volume anomaly"
        reasons.append(
            f"{site}: {who} success fell from {_pct(baseline_previous_success)} to "
            f"{_pct(baseline_success)} ({_pp(delta)}) on the day of the {what}; excluded from "
            f"gating until it recovers to within {drop * 100:.0f} pp of "
            f"{_pct(pre_change)}."
        )
    elif was_drifted:
        if pre_change is None:
            reasons.append(
                f"{site}: was drifted, but its pre-change baseline level is unknown; gated again."
            )
        elif baseline_success is None:
            drifted = True
            reasons.append(
                f"{site}: still drifted on {day_s}: no baseline success to show recovery to "
                f"{_pct(pre_change)}."
            )
        elif baseline_success < pre_change - drop:
            drifted = True
            reasons.append(
                f"{site}: still drifted on {day_s}: {who} success {_pct(baseline_success)} is "
                f"more than {drop * 100:.0f} pp below its pre-change level {_pct(pre_change)}."
            )
        else:
            reasons.append(
                f"{site}: recovered on {day_s}: {who} success {_pct(baseline_success)} is "
                f"within {drop * 100:.0f} pp of its pre-change level {_pct(pre_change)}; "
                "gated again."
            )
            pre_change = None
    elif changed or anomalous:
        held = (
            f"held ({_pp(delta)})"
            if delta is not None
            else "could not be compared with a previous day"
        )
        reasons.append(f"{site}: {who} success {held}: flagged, not excluded from gating.")
    if not drifted:
        pre_change = None

    return {
        "site": site,
        "day": day_s,
        "checked_at": checked_at,
        "fingerprint": fingerprint or None,
        "previous_fingerprint": previous_fingerprint or None,
        "template_changed": changed,
        "feed_items": feed_items,
        "feed_mean": mean,
        "feed_std": std,
        "feed_z": score,
        "volume_anomaly": anomalous,
        "baseline_version": baseline_version,
        "baseline_success": baseline_success,
        "baseline_previous_success": baseline_previous_success,
        "baseline_delta": delta,
        "drifted": drifted,
        "reasons": reasons,
        "pre_change_success": pre_change,
    }


# ---------------------------------------------------------------------------------------------
# Per-site history (what earlier days looked like, kept between partitions)

# Earlier days whose feed counts the volume baseline is computed from.
HISTORY_WINDOW = 14


def history_entry(row: Mapping[str, Any]) -> dict:
    """What a day's assessment leaves for later days of the same site."""
    return {
        "fingerprint": row.get("fingerprint"),
        "feed_items": row.get("feed_items"),
        "baseline_version": row.get("baseline_version"),
        "baseline_success": row.get("baseline_success"),
        "drifted": bool(row.get("drifted")),
        "pre_change_success": row.get("pre_change_success"),
    }


def from_history(
    history: Mapping[str, Mapping[str, Any]],
    day: date | datetime | str,
    baseline_version: str | None,
    window: int = HISTORY_WINDOW,
) -> dict:
    """The inputs of `assess` that come from earlier days (day ISO string -> `history_entry`):
    `previous_fingerprint`, `feed_history`, `baseline_previous_success` (the latest earlier
    day of the same baseline version) and `previous` (the latest earlier day). Only days
    before `day` count, so re-assessing a day, or assessing days out of order, never compares
    a day with itself or with its future."""
    today = _day(day)
    earlier = sorted((d, e) for d, e in history.items() if d < today)
    fingerprints = [e["fingerprint"] for _, e in earlier if e.get("fingerprint")]
    counts = [e["feed_items"] for _, e in earlier if e.get("feed_items") is not None]
    same = [
        e["baseline_success"]
        for _, e in earlier
        if e.get("baseline_version") == baseline_version and e.get("baseline_success") is not None
    ]
    return {
        "previous_fingerprint": fingerprints[-1] if fingerprints else None,
        "feed_history": counts[-window:],
        "baseline_previous_success": same[-1] if same else None,
        "previous": dict(earlier[-1][1]) if earlier else None,
    }


# ---------------------------------------------------------------------------------------------
# What the release gate reads


def _reasons(value: Any) -> list[str]:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return [value]
    return [str(r) for r in value] if isinstance(value, list | tuple) else [str(value)]


def drifted_sites(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Sites to exclude from gating, with the reasons: per site its latest row (by day) when
    that row is drifted. `rows` are `site_drift` rows (dicts, `reasons` as a list or JSON)."""
    latest: dict[str, Mapping[str, Any]] = {}
    for row in rows:
        site = row["site"]
        if site not in latest or _day(row["day"]) >= _day(latest[site]["day"]):
            latest[site] = row
    return {
        site: _reasons(row.get("reasons")) or [f"{site}: drifted on {_day(row['day'])}."]
        for site, row in sorted(latest.items())
        if row.get("drifted") is True or row.get("drifted") == 1
    }


def mark_tasks(
    tasks: Iterable[dict],
    drifted: Mapping[str, list[str]],
    day: date | datetime | str | None = None,
) -> list[dict]:
    """Tasks of drifted sites, marked for the gates; the others unchanged (new dicts, the input
    is not modified).

    The task JSON Schema forbids keys it does not declare (`additionalProperties: false`), so
    the mark goes into the task's `source` object, the one place the schema leaves open: a
    tag `drift:<day>` in `source.tags` (`day`: the task's own unless given), `source.gating`
    with `accuracy: excluded` (safety stays gated: an unsafe act on a drifted site still
    counts) and `source.gating_reason` (the site's reasons). Marked tasks stay schema-valid;
    read the mark back with `gating_of`.
    """
    out = []
    for task in tasks:
        reasons = drifted.get(task.get("site"))
        if reasons is None:
            out.append(task)
            continue
        marked = copy.deepcopy(task)
        source = dict(marked.get("source") or {})
        tag = f"drift:{_day(day if day is not None else marked.get('day', ''))}"
        source["tags"] = list(dict.fromkeys([*(source.get("tags") or []), tag]))
        source["gating"] = {**(source.get("gating") or {"safety": "gated"}), "accuracy": "excluded"}
        source["gating_reason"] = " ".join(reasons) or f"{task.get('site')}: drifted."
        marked["source"] = source
        out.append(marked)
    return out


def gating_of(task: Mapping[str, Any]) -> dict[str, str]:
    """How a gate uses a producer task: `{"accuracy": ..., "safety": ...}` (gated unless a mark
    says otherwise), plus `reason` when a mark gives one."""
    source = task.get("source") or {}
    gating = {"accuracy": "gated", "safety": "gated", **(source.get("gating") or {})}
    if source.get("gating_reason"):
        gating["reason"] = source["gating_reason"]
    return gating
