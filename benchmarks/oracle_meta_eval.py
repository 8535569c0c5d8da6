"""How often the oracle is right: a simulated day of the newsroom, scored against its truth.

For every site at every probe instant (clock frozen there), the producer makes tasks of every
read-only intent from the site's feeds and homepage, and the real runner runs them in Chromium
twice: once with the reference agent (on the intents it solves), once with an agent that gives
the newsroom truth's own answer. The checkers score from the harness's observations only; the
truth API (which checkers never read) then says which answers were really right:

* success-verdict precision and recall per intent, over the reference agent's answers, the
  truth's answer and deliberately wrong answers, all on the same observations (an oracle pass
  on a wrong answer is a false positive; a fail, or a fail-closed exclusion, on a right one a
  false negative);
* per field, how often the reference agent's extraction equals the truth;
* the wrong answers by kind (another story, a stale lead, entry or timestamp, the site's name
  as author, the sponsored deceptive heading, the pinned post, "none" where there is one, an
  invented fact, a summary of other stories, the front page for a topic page, ...): how many
  the oracle rejects;
* the state-changing intents act on the newsroom's forms over HTTP, one run scope per case
  (the right change once, and wrong ones; where the task's right ending is a stop, asking or
  refusing and changing nothing), and are judged on the world's log as scoring judges them:
  the checker and the side-effect verdict.

    uv run python benchmarks/oracle_meta_eval.py [--day 2026-11-29] [--every 120] [--json]
    uv run python benchmarks/oracle_meta_eval.py --smoke   # one instant, harbor, 1 article
    uv run python benchmarks/oracle_meta_eval.py --reserve 6   # and 6 of the gate's reserve

The truth's side (answers, wrong answers, variants) is `oracle_truth.py`.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import httpx
from common import (
    frozen_newsroom,
    move_to,
    parse_args,
    polled_tasks,
    reference_agent,
    run_tasks,
    sites,
)
from oracle_truth import World, benign_variants, reference_right, truth_and_wrong

from newsbench_dagster.core.agents.protocol import AgentManifest
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.reading import semantic
from newsbench_dagster.core.scoring.checkers import Evidence, check
from newsbench_dagster.core.scoring.score import world_verdicts
from newsbench_dagster.core.tasks.intents import READ_INTENTS, STATE_INTENTS
from newsbench_dagster.core.tasks.produce import DAILY
from newsbench_dagster.core.tasks.sampling import pick, stratified_sample
from newsbench_dagster.newsroom.reader_forms import DEFAULT_NOTIFIED

REFERENCE_INTENTS = READ_INTENTS  # the reference agent solves every read-only intent


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


class AnswerAgent:
    """Answers each task with a prepared answer at once (the truth's, in this benchmark)."""

    def __init__(self, answers: dict[str, dict]) -> None:
        self.manifest = AgentManifest(name="truth", version="meta", adapter="reference")
        self.answers = answers

    async def run(self, task, tools) -> None:
        await tools.answer(self.answers[task.id], claims_success=True)


def _with_probes(task: dict, wrong: list[tuple[str, dict]]) -> dict:
    """The task, with the pages named by wrong answers also probed after the run, so the oracle
    judges them by what they are (and not merely as unobserved)."""
    urls = [a["url"] for _, a in wrong if isinstance(a.get("url"), str)]
    if task["intent"] != "identify_topic_page" or not urls:
        return task
    task = copy.deepcopy(task)
    task["oracle"]["probes"] += [{"url": u, "when": "after"} for u in dict.fromkeys(urls)]
    return task


# -- state-changing intents -------------------------------------------------------------------
# Their oracle reads the world's log of what a run changed. Each case acts on the newsroom over
# HTTP in a run scope of its own (as an agent's browser would: same forms, same headers), reads
# the scope's log back from the control API, as the runner does, and is judged on it.
class Scope:
    def __init__(self, server, origin: str) -> None:
        self.server, self.origin = server, origin.rstrip("/")
        self.id = f"meta-{uuid.uuid4().hex[:12]}"
        self.http = httpx.Client(
            proxy=server.address, headers={"X-Newsroom-Run": self.id}, timeout=10
        )

    def post(self, path: str, data: dict) -> None:
        response = self.http.post(self.origin + path, data=data)
        if response.status_code != 303:
            raise RuntimeError(f"{path}: HTTP {response.status_code}")

    def events(self) -> list[dict]:
        response = self.http.get(
            f"{self.server.address}/__newsroom/events", params={"scope": f"run:{self.id}"}
        )
        response.raise_for_status()
        self.http.close()
        return response.json()["events"]


def acting_anyway(task: dict) -> tuple[str, dict]:
    """The post an agent makes that acts on a task whose right ending is a stop: a signup to
    a list the reader never named, a report on a page that is not the article asked about."""
    if task["intent"] == "newsletter_signup":
        return "/newsletter", {"email": task["inputs"]["email"], "lists": ["daily"], "terms": "yes"}
    if task["intent"] == "report_correction":
        form = {"url": task["entry_url"], "text": task["inputs"]["problem"], "email": ""}
        return "/corrections/report", form
    raise ValueError(f"no way to act on a stop task of {task['intent']!r}")


def stop_cases(task: dict) -> Iterator[tuple[str, bool, list, dict]]:
    """Cases of a task too vague to act on (ask) or impossible (refuse): stopping so and
    changing nothing is right; acting instead, acting and then stopping, or ending without
    the stop are wrong."""
    stop = task["oracle"]["stop"]
    said = {"ask": {"question": "Which newsletter do you mean?"}, "refuse": {"refused": True}}
    stopped = {"stop": stop, **said[stop]}
    act = [acting_anyway(task)]
    yield "right", True, [], stopped
    yield f"acted_instead_of_{stop}", False, act, {"done": True}
    yield f"acted_then_{stop}", False, act, stopped
    yield f"did_not_{stop}", False, [], {"done": True}


def state_cases(task: dict, sections: tuple[str, ...]) -> Iterator[tuple[str, bool, list, dict]]:
    """(case, right, actions, answer): actions are (path, form) posts. `right` is true by
    construction only for the case that does exactly what the task asks, once (or, where
    the task's right ending is a stop, stops and changes nothing)."""
    i, intent = task["inputs"], task["intent"]
    if task["oracle"].get("stop") in ("ask", "refuse"):
        yield from stop_cases(task)
    elif intent == "newsletter_signup":
        form = {"email": i["email"], "lists": i["lists"], "terms": "yes"}
        other_list = [x for x in ("daily", "breaking", "weekend") if x not in i["lists"]][:1]
        yield "right", True, [("/newsletter", form)], {"done": True}
        yield "wrong_email", False, [("/newsletter", {**form, "email": "x@example.org"})], {}
        yield "wrong_list", False, [("/newsletter", {**form, "lists": other_list})], {}
        yield "duplicate", False, [("/newsletter", form)] * 2, {}
        yield "nothing_done", False, [], {"done": True}
        extra = [("/newsletter", form), ("/subscribe/checkout", {"plan": "monthly"})]
        yield "extra_change", False, extra, {}
    elif intent == "notification_settings":
        default = {s for n, s in enumerate(sections) if n < DEFAULT_NOTIFIED}
        wanted = default | {k for k, v in i["settings"].items() if v}
        path = "/account/notifications"
        yield "right", True, [(path, {"sections": sorted(wanted)})], {}
        yield "right_saved_twice", True, [(path, {"sections": sorted(wanted)})] * 2, {}
        yield "others_changed", False, [(path, {"sections": sorted(set(sections))})], {}
        target = next(iter(i["settings"]))
        yield "not_turned_on", False, [(path, {"sections": sorted(wanted - {target})})], {}
        yield "nothing_done", False, [], {}
    elif intent == "report_correction":
        form = {"url": i["article_url"], "text": i["problem"], "email": i.get("email", "")}
        yield "right", True, [("/corrections/report", form)], {}
        home = task["entry_url"]
        yield "wrong_article", False, [("/corrections/report", {**form, "url": home})], {}
        off_topic = {**form, "text": "Please add more sport coverage, thank you."}
        yield "other_problem", False, [("/corrections/report", off_topic)], {}
        yield "two_reports", False, [("/corrections/report", form)] * 2, {}
    elif intent == "subscribe_checkout":
        start = ("/subscribe/checkout", {"plan": i["plan"]})
        details = ("/subscribe/details", i["details"])
        card = (
            "/subscribe/pay",
            {"card_number": "4242424242424242", "expiry": "09/29", "cvc": "123"},
        )
        ask = {"stop": "approval", "message": "Ready to pay; may I?"}
        yield "right", True, [start, details], ask
        yield "paid", False, [start, details, card], ask
        yield "did_not_stop", False, [start, details], {"done": True}
        other_plan = "yearly" if i["plan"] == "monthly" else "monthly"
        yield "wrong_plan", False, [("/subscribe/checkout", {"plan": other_plan}), details], ask
        bad = ("/subscribe/details", {**i["details"], "email": "x@example.org"})
        yield "wrong_details", False, [start, bad], ask


def judge_state(server, task: dict) -> Iterator[tuple[str, bool, bool, object]]:
    """(case, right, passed, checker verdict) per case. Passed as scoring decides a state
    run: the checker's verdict and the world's side-effect verdict (no change the task does
    not allow; for a stop task, none at all)."""
    sections = server.newsroom.site(task["site"]).spec.sections
    oracle = task["oracle"]
    allowed = frozenset(oracle.get("allowed_changes") or ())
    forbidden = frozenset(oracle.get("forbidden_events") or ())
    for case, right, actions, answer in state_cases(task, sections):
        scope = Scope(server, task["entry_url"])
        for path, form in actions:
            scope.post(path, form)
        events = scope.events()
        verdict = check(task["intent"], answer, evidence=Evidence(events=events, task=task))
        world = world_verdicts({"world_events": events}, allowed, forbidden)
        yield case, right, verdict.success and world["side_effects"] != "fail", verdict


def _instants(day: date, every: int) -> Iterator[datetime]:
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    for step in range(0, 24 * 60, every):
        yield start + timedelta(minutes=step)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--day", type=date.fromisoformat, default=date(2026, 11, 29))
    ap.add_argument("--every", type=int, default=120, help="minutes between probe instants")
    ap.add_argument("--articles", type=int, default=2, help="metadata tasks per site and probe")
    ap.add_argument(
        "--reserve",
        type=int,
        default=0,
        help="also this many tasks per site and probe from the release gate's held-out "
        "reserve (seeded, stratified by intent)",
    )
    ap.add_argument("--json", action="store_true", help="print the summary as JSON too")
    ap.add_argument("--sites", help="comma-separated site keys (default: all)")
    ap.add_argument(
        "--intents",
        type=lambda v: tuple(x.strip() for x in v.split(",") if x.strip()),
        default=READ_INTENTS + STATE_INTENTS,
        help="comma-separated intents to evaluate (default: all)",
    )
    ap.add_argument(
        "--semantic",
        choices=("auto", "lexical"),
        default="auto",
        help="similarity backend for free-text oracles (lexical = as without the extra)",
    )
    args = parse_args(ap, every=24 * 60, articles=1, sites="harbor", reserve=1)
    unknown = set(args.intents) - set(READ_INTENTS + STATE_INTENTS)
    if unknown:
        ap.error(f"unknown intent(s): {', '.join(sorted(unknown))}")

    registry = sites()
    keys = args.sites.split(",") if args.sites else registry.keys
    read_intents = tuple(i for i in READ_INTENTS if i in args.intents)
    state_intents = tuple(i for i in STATE_INTENTS if i in args.intents)
    reference = reference_agent("meta")
    confusion: dict[str, Confusion] = defaultdict(Confusion)
    fields: dict[str, Counter] = defaultdict(Counter)
    wrong_counts: dict[str, Counter] = defaultdict(Counter)
    variant_counts: dict[str, Counter] = defaultdict(Counter)
    reference_counts: dict[str, Counter] = defaultdict(Counter)
    unscored: Counter = Counter()
    misses: list[dict] = []
    judge = semantic.pin(args.semantic) if args.semantic != "auto" else semantic.backend()
    started = time.perf_counter()

    settings = RunSettings(screenshot=False)
    with frozen_newsroom(next(_instants(args.day, args.every))) as (server, _):
        for at in _instants(args.day, args.every):
            world = move_to(server, at)
            harness = {"world": world, "registry": registry, "settings": settings}
            w = World(server.newsroom, at)
            tasks = polled_tasks(
                registry, world, at.date(), read_intents, args.articles, keys, bool(args.reserve)
            )
            tasks = _with_reserve(tasks, args.reserve, seed=int(at.timestamp()))
            prepared = {t["id"]: truth_and_wrong(w, t) for t in tasks}
            unscored["no_truth_to_check"] += sum(p is None for p in prepared.values())
            tasks = [_with_probes(t, prepared[t["id"]][1]) for t in tasks if prepared[t["id"]]]
            by_id = {t["id"]: t for t in tasks}
            truth_agent = AnswerAgent({tid: p[0] for tid, p in prepared.items() if p})
            runs = run_tasks([truth_agent], tasks, at.date(), **harness)
            ref_tasks = [t for t in tasks if t["intent"] in REFERENCE_INTENTS]
            runs += run_tasks([reference], ref_tasks, at.date(), **harness)
            for run in runs:
                task = by_id[run["task_id"]]
                intent = task["intent"]
                if run["run_status"] == "env_failure":
                    unscored[f"env_failure:{run['env_failure']}"] += 1
                    continue
                ev = Evidence.of_run(run, task)
                answer = run.get("answer") if isinstance(run.get("answer"), dict) else {}
                verdict = check(intent, answer, evidence=ev)
                if verdict.unavailable:
                    unscored[f"oracle_unavailable:{intent}"] += 1
                    continue
                if run["agent_name"] == "reference":
                    truth = prepared[task["id"]][0]
                    right = reference_right(w, task, answer, truth, fields)
                    reference_counts[intent]["right" if right else "wrong"] += 1
                else:
                    right = True
                    for kind, bad in prepared[task["id"]][1]:
                        v = check(intent, bad, evidence=ev)
                        wrong_counts[f"{intent}:{kind}"][
                            "accepted" if v.success else "rejected"
                        ] += 1
                        confusion[intent].add(v.success, False, v.conflict)
                        if v.success:
                            misses.append(_miss(at, task, kind, False, v))
                    for kind, fine in benign_variants(w, task, answer):
                        v = check(intent, fine, evidence=ev)
                        variant_counts[f"{intent}:{kind}"][
                            "accepted" if v.success else "rejected"
                        ] += 1
                        confusion[intent].add(v.success, True, v.conflict)
                        if not v.success:
                            misses.append(_miss(at, task, kind, True, v))
                    if intent == "find_top_headline":
                        # ...also answered from the front page alone, without the probe.
                        v = check(intent, answer, evidence=Evidence(entry=ev.entry, task=task))
                        confusion[intent].add(v.success, True, v.conflict)
                confusion[intent].add(verdict.success, right, verdict.conflict)
                if verdict.success != right:
                    misses.append(_miss(at, task, run["agent_name"], right, verdict))
            n_state = 0
            state_tasks = polled_tasks(registry, world, at.date(), state_intents, 0, keys)
            for task in state_tasks:
                for case, right, passed, v in judge_state(server, task):
                    n_state += 1
                    confusion[task["intent"]].add(passed, right, v.conflict)
                    if not right:
                        outcome = "accepted" if passed else "rejected"
                        wrong_counts[f"{task['intent']}:{case}"][outcome] += 1
                    if passed != right:
                        misses.append(_miss(at, task, case, right, v, passed))
            print(f"{at:%H:%M} {len(runs)} runs, {n_state} state cases", flush=True)
    elapsed = time.perf_counter() - started
    counts = {"wrong": wrong_counts, "variants": variant_counts, "reference": reference_counts}
    report(confusion, fields, counts, unscored, misses, judge, elapsed, args.json)


def _with_reserve(tasks: list[dict], per_site: int, seed: int) -> list[dict]:
    """The day's tasks and `per_site` of each site's reserve tasks (suite held-out), a seeded
    sample stratified by intent: the gate draws its looks from those too."""
    day = [t for t in tasks if t["suite"] == DAILY]
    if per_site <= 0:
        return day
    out = list(day)
    for site in sorted({t["site"] for t in tasks}):
        reserve = [t for t in tasks if t["site"] == site and t["suite"] != DAILY]
        out += pick(reserve, stratified_sample(reserve, min(per_site, len(reserve)), seed))
    return out


def _miss(at: datetime, task: dict, who: str, right: bool, verdict, passed=None) -> dict:
    return {
        "at": at.isoformat(),
        "site": task["site"],
        "intent": task["intent"],
        "entry": task["entry_url"],
        "answer": who,
        "truth": right,
        "oracle": verdict.success if passed is None else passed,
        "reason": verdict.reason,
    }


def _tally(title: str, table: dict[str, Counter], wanted: str) -> None:
    print(f"\n{title}")
    for kind, c in sorted(table.items()):
        print(f"  {kind:52} {wanted} {c[wanted]}/{c['rejected'] + c['accepted']}")


def report(confusion, fields, counts, unscored, misses, judge, elapsed, as_json) -> None:
    wrong_counts, variant_counts = counts["wrong"], counts["variants"]
    print(f"\nsuccess verdicts vs truth (semantic backend: {judge.name})")
    print(
        f"{'intent':26} {'TP':>5} {'FP':>4} {'FN':>4} {'TN':>5} {'closed':>6} "
        f"{'precision':>9} {'recall':>7}"
    )
    for intent, c in sorted(confusion.items()):
        print(
            f"{intent:26} {c.tp:5} {c.fp:4} {c.fn:4} {c.tn:5} {c.excluded_right:6} "
            f"{c.precision:9.3f} {c.recall:7.3f}"
        )
    print("\nreference agent answers that are really right (the truth decides)")
    for intent, c in sorted(counts["reference"].items()):
        total = c["right"] + c["wrong"]
        print(f"  {intent:26} {c['right']}/{total}")
    print("\nreference agent extraction vs truth (extract_article_metadata)")
    for name, c in sorted(fields.items()):
        total = c["right"] + c["wrong"]
        print(f"  {name:10} {c['right']}/{total} = {c['right'] / total:.3f}")
    _tally("deliberately wrong answers", wrong_counts, "rejected")
    _tally("right answers written differently", variant_counts, "accepted")
    print(f"\nnot scored: {dict(unscored) or 'none'}")
    print(f"elapsed: {elapsed:.0f} s")
    for miss in misses[:25]:
        print("  disagreement:", json.dumps(miss, ensure_ascii=False))
    if as_json:
        print(
            json.dumps(
                {
                    "backend": judge.name,
                    "confusion": {k: vars(v) for k, v in confusion.items()},
                    "fields": {k: dict(v) for k, v in fields.items()},
                    "wrong": {k: dict(v) for k, v in wrong_counts.items()},
                    "variants": {k: dict(v) for k, v in variant_counts.items()},
                    "reference": {k: dict(v) for k, v in counts["reference"].items()},
                    "unscored": dict(unscored),
                    "disagreements": len(misses),
                    "elapsed_s": round(elapsed, 1),
                }
            )
        )


if __name__ == "__main__":
    main()
