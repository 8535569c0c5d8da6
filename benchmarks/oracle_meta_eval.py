"""How often the oracle is right: a simulated day of the newsroom, scored against its truth.

For every site at every probe instant (clock frozen there), the producer makes tasks from the
site's feed, the reference agent runs them in Chromium through the real runner, and the
checkers score them from the harness's observations. The newsroom's truth API (which checkers
never read) then says which answers were really right:

* success-verdict precision and recall per intent, over the agent's answers, the truth's own
  answer and the wrong answers below, all on the same observations (an oracle pass on a wrong
  answer is a false positive; a fail, or a fail-closed exclusion, on a right one a false
  negative);
* per field, how often the reference agent's extraction equals the truth;
* deliberately wrong answers fed to the oracle on the same observations (another story, a stale
  lead or timestamp, the site's name as author, the sponsored deceptive heading): how many it
  rejects.

    uv run python benchmarks/oracle_meta_eval.py [--day 2026-11-29] [--every 120] [--articles 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from newsbench_dagster.core.agents import AgentManifest, build_agent
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.browser import BrowserOptions
from newsbench_dagster.core.checkers import check
from newsbench_dagster.core.network import Fetcher, RobotsRules, Routing
from newsbench_dagster.core.producer import make_tasks, poll_site
from newsbench_dagster.core.runner import Runner, RunSettings
from newsbench_dagster.core.scoring import score_run
from newsbench_dagster.core.sites import load_sites
from newsbench_dagster.core.text import parse_time
from newsbench_dagster.newsroom import FixedClock, Newsroom, NewsroomServer
from newsbench_dagster.newsroom.truth import ArticleTruth, SiteTruth
from newsbench_dagster.paths import SITES_FILE

SAME_TIME = timedelta(seconds=60)  # "equal" for timestamps: the pages show seconds


@dataclass
class Confusion:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    excluded_right: int = 0  # failed closed on a right answer (counted in fn too)

    def add(self, passed: bool, right: bool, conflict: bool) -> None:
        if passed and right:
            self.tp += 1
        elif passed:
            self.fp += 1
        elif right:
            self.fn += 1
            self.excluded_right += conflict
        else:
            self.tn += 1

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else float("nan")

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else float("nan")


def _same_time(a: object, b: datetime | None) -> bool:
    if b is None:
        return a in (None, "")
    t = parse_time(a) if isinstance(a, str) else None
    return t is not None and abs(t - b) <= SAME_TIME


def _url(u: object) -> str:
    return str(u or "").split("#", 1)[0].rstrip("/")


def top_is_right(answer: dict, truth: SiteTruth) -> bool:
    return (
        _url(answer.get("url")) == _url(truth.lead.url)
        and answer.get("headline") == truth.lead.headline
    )


def field_checks(answer: dict, article: ArticleTruth) -> dict[str, bool]:
    return {
        "headline": answer.get("headline") == article.headline,
        "authors": list(answer.get("authors") or []) == article.authors,
        "published": _same_time(answer.get("published"), article.published),
        "modified": _same_time(answer.get("modified") or answer.get("published"), article.modified),
    }


def truth_answer(intent: str, truth: SiteTruth, task: dict) -> dict:
    if intent == "find_top_headline":
        return {"headline": truth.lead.headline, "url": truth.lead.url}
    article = next(a for a in truth.articles if _url(a.url) == _url(task["entry_url"]))
    return {
        "headline": article.headline,
        "authors": article.authors,
        "published": article.published.isoformat(),
        "modified": article.modified.isoformat(),
    }


def wrong_answers(intent: str, answer: dict, truth: SiteTruth, earlier: SiteTruth, task: dict):
    """(kind, answer) pairs that are wrong by construction."""
    if intent == "find_top_headline":
        other = next(a for a in truth.articles if a.url != truth.lead.url)
        yield "another_story", {"headline": other.headline, "url": other.url}
        if earlier.lead.url != truth.lead.url:
            yield "stale_lead", {"headline": earlier.lead.headline, "url": earlier.lead.url}
        for trap in truth.traps:
            if trap["kind"] == "deceptive_heading":
                url = trap["url"].rstrip("/") + "/sponsored/offer"
                yield "deceptive_heading", {"headline": trap["text"], "url": url}
        return
    article = next(a for a in truth.articles if _url(a.url) == _url(task["entry_url"]))
    right = {
        "headline": article.headline,
        "authors": article.authors,
        "published": article.published.isoformat(),
        "modified": article.modified.isoformat(),
    }
    other = next(a for a in truth.articles if a.url != article.url and a.headline)
    yield (
        "another_story",
        {
            "headline": other.headline,
            "authors": other.authors,
            "published": other.published.isoformat(),
            "modified": other.modified.isoformat(),
        },
    )
    stale = (article.published - timedelta(hours=3)).isoformat()
    yield "stale_published", {**right, "published": stale}
    site_name = truth.lead.byline if not truth.lead.authors else None
    yield "author_is_site_name", {**right, "authors": [site_name or _site_name(truth)]}
    if article.modified - article.published > timedelta(minutes=30):
        yield "stale_modified", {**right, "modified": article.published.isoformat()}


def _site_name(truth: SiteTruth) -> str:
    return next((a.byline for a in truth.articles if not a.authors), truth.site)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--day", type=date.fromisoformat, default=date(2026, 11, 29))
    ap.add_argument("--every", type=int, default=120, help="minutes between probe instants")
    ap.add_argument("--articles", type=int, default=2, help="metadata tasks per site and probe")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON too")
    args = ap.parse_args()

    registry = load_sites(SITES_FILE)
    newsroom = Newsroom(seed=7)
    clock = FixedClock(datetime(args.day.year, args.day.month, args.day.day, tzinfo=UTC))
    agent = build_agent(AgentManifest(name="reference", version="meta", adapter="reference"))
    confusion: dict[str, Confusion] = defaultdict(Confusion)
    fields: dict[str, Counter] = defaultdict(Counter)
    wrong: dict[str, Counter] = defaultdict(Counter)
    env_failures = 0
    misses: list[dict] = []

    with NewsroomServer(newsroom, clock=clock) as server, tempfile.TemporaryDirectory() as tmp:
        routing = Routing.via_proxy(server.address)
        start = clock()
        for step in range(0, 24 * 60, args.every):
            at = start + timedelta(minutes=step)
            clock.set(at)
            tasks: list[dict] = []
            with Fetcher(routing, registry.allowed_origins) as fetcher:
                for site in registry.sites:
                    rows = poll_site(site, fetcher, None, at.date())
                    tasks += make_tasks(site, at.date(), rows, articles_per_site=args.articles)
                robots = RobotsRules.fetch(fetcher, registry.allowed_origins)
            runner = Runner(
                [agent],
                options=BrowserOptions(routing=routing),
                robots=robots,
                store=LocalArtifactStore(tmp),
                settings=RunSettings(screenshot=False),
            )
            runs = asyncio.run(runner.run(tasks, at.date()))
            by_id = {t["id"]: t for t in tasks}
            truths = {s.key: newsroom.truth(s.key, at) for s in registry.sites}
            earlier = {
                s.key: newsroom.truth(s.key, at - timedelta(minutes=60)) for s in registry.sites
            }
            for run in runs:
                task = by_id[run["task_id"]]
                score = score_run(run, task)
                if score["excluded"] and run["run_status"] == "env_failure":
                    env_failures += 1
                    continue
                intent, truth = task["intent"], truths[task["site"]]
                answer = run.get("answer") if isinstance(run.get("answer"), dict) else {}
                if intent == "find_top_headline":
                    right = top_is_right(answer, truth)
                else:
                    article = next(
                        a for a in truth.articles if _url(a.url) == _url(task["entry_url"])
                    )
                    checks = field_checks(answer, article)
                    for name, ok in checks.items():
                        fields[name]["right" if ok else "wrong"] += 1
                    right = all(checks.values())
                conflict = bool((score.get("checker") or {}).get("conflict"))
                confusion[intent].add(bool(score["success"]), right, conflict)
                if bool(score["success"]) != right:
                    misses.append(
                        {
                            "at": at.isoformat(),
                            "site": task["site"],
                            "intent": intent,
                            "entry": task["entry_url"],
                            "oracle": bool(score["success"]),
                            "truth": right,
                            "reason": (score.get("checker") or {}).get("reason"),
                        }
                    )
                obs = run.get("observation") or {}
                entry, final = obs.get("entry"), obs.get("final")
                # The truth's own answer, on the same observations: the oracle must accept it.
                verdict = check(intent, truth_answer(intent, truth, task), entry, final)
                confusion[intent].add(verdict.success, True, verdict.conflict)
                if intent == "find_top_headline":
                    # ...also answered from the front page alone, without opening the lead.
                    verdict = check(intent, truth_answer(intent, truth, task), entry, entry)
                    confusion[intent].add(verdict.success, True, verdict.conflict)
                for kind, bad in wrong_answers(intent, answer, truth, earlier[task["site"]], task):
                    verdict = check(intent, bad, entry, final)
                    wrong[kind]["rejected" if not verdict.success else "accepted"] += 1
                    confusion[intent].add(verdict.success, False, verdict.conflict)
            print(f"{at:%H:%M} {len(runs)} runs", flush=True)

    print("\nsuccess verdicts vs truth")
    print(
        f"{'intent':28} {'TP':>5} {'FP':>4} {'FN':>4} {'TN':>4} {'closed':>6} "
        f"{'precision':>9} {'recall':>7}"
    )
    for intent, c in sorted(confusion.items()):
        print(
            f"{intent:28} {c.tp:5} {c.fp:4} {c.fn:4} {c.tn:4} {c.excluded_right:6} "
            f"{c.precision:9.3f} {c.recall:7.3f}"
        )
    print("\nreference agent extraction vs truth (extract_article_metadata)")
    for name, counts in sorted(fields.items()):
        total = counts["right"] + counts["wrong"]
        print(f"  {name:10} {counts['right']}/{total} = {counts['right'] / total:.3f}")
    print("\ndeliberately wrong answers")
    for kind, counts in sorted(wrong.items()):
        total = counts["rejected"] + counts["accepted"]
        print(f"  {kind:22} rejected {counts['rejected']}/{total}")
    print(f"\nenvironment failures (not scored): {env_failures}")
    for miss in misses[:20]:
        print("  disagreement:", json.dumps(miss, ensure_ascii=False))
    if args.json:
        print(
            json.dumps(
                {
                    "confusion": {k: vars(v) for k, v in confusion.items()},
                    "fields": {k: dict(v) for k, v in fields.items()},
                    "wrong": {k: dict(v) for k, v in wrong.items()},
                    "env_failures": env_failures,
                    "disagreements": len(misses),
                }
            )
        )


if __name__ == "__main__":
    main()
