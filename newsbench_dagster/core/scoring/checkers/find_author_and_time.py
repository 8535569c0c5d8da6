"""find_author_and_time: the agent is given a headline and must find that article, then say
who wrote it and when it was published. The harness observes the target article itself (a
probe of the page the task was made from, and the agent's final page if it is that article);
the answer is judged against what that page states."""

from __future__ import annotations

from newsbench_dagster.core.scoring.checkers.base import (
    Component,
    Evidence,
    Verdict,
    article_signals,
    contested_authors,
    earliest,
    failed_closed,
    judged,
    metadata_conflicts,
    same_page,
    time_component,
)


def check(answer: dict, ev: Evidence) -> Verdict:
    target = ev.oracle.get("target_url")
    if not target:
        return Verdict(False, 0.0, {}, "the task names no target article", unavailable=True)
    seen = [o for _, o in ev.moments(target)]
    if not seen:
        return Verdict(
            False, 0.0, {}, f"the harness could not observe the target {target}", unavailable=True
        )
    obs = seen[-1]  # the latest look at the article
    sig = article_signals(obs)
    comps: dict[str, Component] = {}
    given_url = answer.get("url")
    if given_url:
        ok = same_page(given_url, target)
        comps["url"] = Component(ok, float(ok), {"answer": given_url})
    conflicts = metadata_conflicts(obs, sig)
    comps["authors"] = contested_authors(answer.get("authors"), sig, sig["site_names"], conflicts)
    comps["published"] = time_component(answer.get("published"), sig["published"])
    published = earliest(sig["published"])
    if conflicts:
        return failed_closed(comps, conflicts, published=published)
    right_target = comps.get("url", comps["authors"]).passed or comps["published"].passed
    return judged(
        comps,
        "author and time match the article",
        right_target=right_target,
        published=published,
    )
