"""identify_topic_page: the agent names the page of the site that collects a topic's stories
(a section or tag page). The harness looks at the page the agent named itself: it must be a
collection page of the task's site (not an article about the topic, not the front page) whose
own main heading names the topic, with stories listed under main."""

from __future__ import annotations

from newsbench_dagster.core.reading.text import fuzzy, normalize_text
from newsbench_dagster.core.scoring.checkers.base import (
    HEADLINE_MATCH,
    Component,
    Evidence,
    Verdict,
    accuracy_of,
    failed_names,
    flag,
    host_of,
    page_record,
    same_page,
    site_names,
)

MIN_LISTED = 3  # a topic page lists stories; fewer is an empty shell or an error page


def _heading_names_topic(heading: str | None, topic: str, names: tuple[str, ...]) -> float:
    """How well the page's heading names the topic: the heading may be just the topic
    ("Economy") or carry the site's name ("Economy | The Harbor Herald")."""
    if not heading or not topic:
        return 0.0
    h, t = normalize_text(heading, names).lower(), normalize_text(topic).lower()
    return 1.0 if h == t else fuzzy(h, t)


def check(answer: dict, ev: Evidence) -> Verdict:
    topic = ev.inputs.get("topic")
    url = answer.get("url")
    if not isinstance(topic, str) or not topic:
        return Verdict(False, 0.0, {}, "the task names no topic", unavailable=True)
    if not url:
        return Verdict(False, 0.0, {}, "no URL in the answer")
    seen = [o for _, o in ev.moments(url)]
    if not seen:
        probe = next((p for p in ev.probes if same_page(p.get("url"), url)), None)
        if probe and probe.get("error"):
            return Verdict(
                False, 0.0, {}, f"could not observe {url}: {probe['error']}", unavailable=True
            )
        # Not probed: off the site or disallowed (the runner only probes allowed pages).
        return Verdict(False, 0.0, {}, f"the answer {url} is not a page of the site")
    obs = seen[-1]
    rec = page_record(obs)
    names = site_names(obs)
    entry_host = host_of(ev.task.get("entry_url") or "")
    comps: dict[str, Component] = {}
    on_site = not entry_host or host_of(url) == entry_host
    comps["on_site"] = flag(on_site, host=host_of(url))
    kind = rec.get("kind")
    comps["collection"] = Component(
        kind == "collection", float(kind == "collection"), {"kind": kind}
    )
    heading = rec.get("main_heading")
    score = _heading_names_topic(heading, topic, names)
    comps["heading"] = Component(score >= HEADLINE_MATCH, score, {"heading": heading})
    listed = len(rec.get("listing") or [])
    comps["lists_stories"] = Component(
        listed >= MIN_LISTED, float(listed >= MIN_LISTED), {"n": listed}
    )
    failed = failed_names(comps)
    if not failed:
        reason = "the topic's page"
    elif kind != "collection":
        reason = f"not a topic page but a {kind or 'unknown'} page"
    else:
        reason = "mismatch: " + ", ".join(failed)
    return Verdict(
        not failed, accuracy_of(comps), comps, reason, right_target=comps["heading"].passed
    )
