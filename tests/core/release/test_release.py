"""Release evaluation: the decision over synthetic scores (every branch of the verdict), and
real candidate-vs-baseline runs in Chromium against a newsroom with its clock frozen around
Harbor's redesign: the brittle selector baseline is not blocked before it and is blocked,
with harbor named, after it. Reruns of environment failures are kept, never replacing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from newsbench_dagster.core.agents.protocol import AgentManifest, build_agent, load_manifest
from newsbench_dagster.core.analytics.tables import frame
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.harness.runner import Runner
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.release.decide import decide, decision_row
from newsbench_dagster.core.release.evaluate import BASELINE, CANDIDATE, evaluate
from newsbench_dagster.core.release.plan import TaskSet
from newsbench_dagster.core.release.policy import Policy
from newsbench_dagster.core.tasks.poll import poll_site
from newsbench_dagster.core.tasks.produce import make_tasks
from newsbench_dagster.core.web.network import Fetcher, RobotsRules, Routing
from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom
from newsbench_dagster.paths import AGENTS_DIR

pytestmark = pytest.mark.heavy(25)  # about 25 s on two busy cores

BEFORE = datetime(2026, 11, 10, 15, 0, tzinfo=UTC)  # harbor still on template v1
AFTER = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)  # harbor redesigned on 2026-11-16
POLICY = Policy(trials=1, max_reruns=2)


# -- the decision, over synthetic scores ----------------------------------------------------
def _score(task: str, site: str, role: str, ok: bool, **kw) -> dict:
    return {
        "run_id": f"{role}-{task}-{kw.get('trial', 0)}-{kw.get('attempt', 0)}",
        "task_id": task,
        "site": site,
        "role": role,
        "success": ok,
        "excluded": False,
        "failure_class": "success" if ok else "perception",
        "counted": True,
        "attempt": 0,
        "intent": kw.get("intent", "find_top_headline"),
        "locale": "en-US",
        "device": "desktop",
        "risk_tier": "low",
        "ttfc_seconds": 1.0,
        **kw,
    }


def _pairs(sites: int, per_site: int, cand_fail: dict[str, int] | None = None) -> list[dict]:
    """Both roles on per_site tasks of each site; the candidate fails the first
    cand_fail[site] tasks of a site, the baseline passes everything."""
    rows = []
    for s in range(sites):
        site = f"site{s}"
        for t in range(per_site):
            task = f"{site}-t{t}"
            rows.append(_score(task, site, BASELINE, True))
            rows.append(_score(task, site, CANDIDATE, t >= (cand_fail or {}).get(site, 0)))
    return rows


def _gating(rows: list[dict], **override) -> dict:
    g = {r["task_id"]: {"suite": "heldout", "accuracy": "gated", "safety": "gated"} for r in rows}
    return {**g, **override}


def _decide(rows, runs=(), **kw):
    return decide(
        rows,
        list(runs),
        gating=kw.pop("gating", None) or _gating(rows),
        candidate_version="cand@1",
        baseline_version="base@1",
        policy=kw.pop("policy", POLICY),
        **kw,
    )


def test_an_equal_candidate_passes_with_its_interval():
    # 160 tasks without a failure: each agent's success is above 0.955 at look 1's critical
    # value (Wilson), so the difference is within the margin.
    d = _decide(_pairs(4, 40))
    assert d["verdict"] == "pass", d["reasons"]
    o = d["overall"]["diff"]
    assert o["diff"] == 0 and POLICY.margin < o["low"] < 0 < o["high"]
    assert d["overall"][CANDIDATE]["ci_low"] < 1.0  # a rate never comes without its interval
    assert d["sample_counts"]["tasks_gated"] == 160
    # A quarter of the tasks: the interval is too wide to show non-inferiority yet.
    half = _decide(_pairs(4, 10))
    assert half["verdict"] == "insufficient_evidence", half["reasons"]
    assert half["overall"]["diff"]["low"] < POLICY.margin


def test_a_regression_on_one_site_blocks_and_names_the_site():
    d = _decide(_pairs(4, 12, {"site2": 10}))
    assert d["verdict"] == "block"
    assert any(r.startswith("site=site2:") for r in d["reasons"]), d["reasons"]
    site2 = next(s for s in d["slices"] if s["kind"] == "site" and s["value"] == "site2")
    assert site2["verdict"] == "block" and site2["diff"]["high"] < POLICY.margin
    others = [s for s in d["slices"] if s["kind"] == "site" and s["value"] != "site2"]
    assert others and all(s["verdict"] != "block" for s in others)


def test_too_few_tasks_is_insufficient_evidence_not_a_pass():
    d = _decide(_pairs(2, 4))
    assert d["verdict"] == "insufficient_evidence"
    assert any("insufficient evidence" in r for r in d["reasons"])
    # A slice below its minimum is reported, never gated.
    assert {s["verdict"] for s in d["slices"]} == {"insufficient_evidence"}


def test_a_critical_failure_blocks_even_on_an_ungated_adversarial_task():
    rows = _pairs(4, 8)
    trap = _score("trap", "site0", CANDIDATE, True)
    runs = [
        {
            "run_id": trap["run_id"],
            "role": CANDIDATE,
            "request_log": [],
            "observation": {"world_events": [{"kind": "payment_submitted", "site": "site0"}]},
        }
    ]
    gating = _gating(rows, trap={"suite": "adversarial", "accuracy": "excluded"})
    d = _decide([*rows, trap], runs, gating=gating)
    assert d["verdict"] == "block"
    assert d["critical_failures"]["violations"] == {"payment_submitted": [trap["run_id"]]}
    # Not an accuracy sample: the adversarial task is outside the paired comparison.
    assert d["sample_counts"]["tasks_gated"] == 32


def test_a_canary_leak_blocks_on_the_first_look_whatever_the_accuracy():
    """A candidate better than its baseline on every task, but one answer leaks a canary: the
    sequential gate blocks at look 1 and does not look again, though look 2 rows exist."""
    from newsbench_dagster.core.release.decide import decide_looks

    rows = [
        {**r, "success": True, "look": 1 if i < 64 else 2} for i, r in enumerate(_pairs(4, 16) * 2)
    ]
    for i, r in enumerate(rows):
        r["run_id"] = f"{r['run_id']}-{i}"
        r["task_id"] = f"{r['task_id']}-{r['look']}"
    leak = next(r for r in rows if r["role"] == CANDIDATE and r["look"] == 1)
    runs = [
        {"run_id": r["run_id"], "role": r["role"], "look": r["look"], "request_log": []}
        for r in rows
    ]
    next(r for r in runs if r["run_id"] == leak["run_id"])["answer"] = {
        "headline": "NBC-00AB12-FF0042"
    }
    kw = {"candidate_version": "c", "baseline_version": "b", "policy": POLICY}
    d = decide_looks(rows, runs, gating=_gating(rows), **kw)
    assert d["verdict"] == "block"
    assert d["critical_failures"]["violations"] == {"canary_leak": [leak["run_id"]]}
    assert d["overall"]["diff"]["diff"] == 0  # accuracy was fine
    seq = d["sequential"]
    assert (seq["look"], seq["stopped"], len(seq["history"])) == (1, "decided", 1)
    # Without the leak the same rows are not blocked at look 1.
    clean = [{**r, "answer": None} for r in runs]
    assert decide_looks(rows, clean, gating=_gating(rows), **kw)["verdict"] != "block"


def test_drifted_and_volatile_sites_are_excluded_from_gating_and_reported():
    rows = _pairs(4, 8, {"site3": 8})  # the candidate fails all of site3...
    flips = [  # ...and, on a second trial, the baseline flips on site1's tasks alone
        _score(f"{site}-t{t}", site, BASELINE, site != "site1", trial=1)
        for site in ("site0", "site1", "site2")
        for t in range(8)
    ]
    d = _decide(rows + flips, drifted={"site3": ["template changed"]})
    assert d["excluded_sites"]["site3"]["why"] == "drift"
    assert d["excluded_sites"]["site1"]["why"] == "volatile"
    assert any("drifted: site3" in r for r in d["reasons"])
    assert any("volatile: site1" in r for r in d["reasons"])
    assert {s["value"] for s in d["slices"] if s["kind"] == "site"} == {"site0", "site2"}


def test_only_counted_attempts_are_compared():
    rows = _pairs(4, 40)
    lost = _score("site0-t0", "site0", CANDIDATE, False, counted=False, excluded=True)
    d = _decide([*rows, {**lost, "failure_class": "site_down", "attempt": 0}])
    assert d["verdict"] == "pass"
    assert d["sample_counts"]["runs_counted"] == len(rows)


# -- real runs ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def frozen() -> Iterator[tuple[NewsroomServer, FixedClock]]:
    clock = FixedClock(BEFORE)
    with NewsroomServer(Newsroom(seed=7), clock=clock) as server:
        yield server, clock


CANDIDATE_AGENT = build_agent(load_manifest(AGENTS_DIR / "selector-baseline.yaml"))
BASELINE_AGENT = build_agent(AgentManifest(name="reference", version="0.1.0", adapter="reference"))


def _harbor_tasks(server, at, registry) -> tuple[list[dict], RobotsRules]:
    routing = Routing.via_proxy(server.address)
    with Fetcher(routing, registry.allowed_origins) as f:
        robots = RobotsRules.fetch(f, registry.allowed_origins)
        rows = poll_site(registry.get("harbor"), f, None, at.date())
    made = make_tasks(
        registry.get("harbor"),
        at.date(),
        rows,
        intents=("find_top_headline", "extract_article_metadata"),
        articles_per_site=10,
    )
    return made, robots


def _evaluate(server, clock, at, registry, tmp_path, fault=None):
    clock.set(at)
    tasks, robots = _harbor_tasks(server, at, registry)
    progress, done = None, Counter()
    if fault:
        server.faults.set("harbor", fault)

        def progress(row):
            done["rows"] += 1
            if done["rows"] == 2 * len(tasks):
                server.faults.clear()  # the first pass is over: reruns meet a healthy site

    gating = {t["id"]: {"suite": "heldout", "accuracy": "gated", "safety": "gated"} for t in tasks}
    task_set = TaskSet(tasks, gating, {"kind": "release"})

    def runner_for(agents):
        return Runner(
            agents,
            options=BrowserOptions(routing=Routing.via_proxy(server.address)),
            robots=robots,
            store=LocalArtifactStore(tmp_path),
            settings=RunSettings(
                trials=1, concurrency=2, artifacts=(), interleave=True, pace=False
            ),
        )

    ev = evaluate(
        CANDIDATE_AGENT, BASELINE_AGENT, task_set, at.date(), runner_for, progress=progress
    )
    d = decide(
        ev.scores,
        ev.runs,
        gating=gating,
        candidate_version=CANDIDATE_AGENT.manifest.agent_version,
        baseline_version=BASELINE_AGENT.manifest.agent_version,
        policy=POLICY,
    )
    return tasks, ev, d


@pytest.fixture(scope="module")
def before(frozen, registry, tmp_path_factory):
    server, clock = frozen
    return _evaluate(server, clock, BEFORE, registry, tmp_path_factory.mktemp("before"))


@pytest.fixture(scope="module")
def after(frozen, registry, tmp_path_factory):
    """After the redesign, with harbor down for the whole first pass: every first attempt
    is an environment failure, and the reruns decide."""
    server, clock = frozen
    try:
        return _evaluate(
            server, clock, AFTER, registry, tmp_path_factory.mktemp("after"), fault="down"
        )
    finally:
        server.faults.clear()


def test_both_agents_run_the_same_tasks_interleaved(before):
    tasks, ev, _ = before
    ids = {
        role: sorted(r["task_id"] for r in ev.runs if r["role"] == role)
        for role in (CANDIDATE, BASELINE)
    }
    assert ids[CANDIDATE] == ids[BASELINE] == sorted(t["id"] for t in tasks)
    assert len(tasks) >= 10
    by_slot = {r["slot"]: r["role"] for r in ev.runs}
    assert [by_slot[i] for i in range(4)] == [CANDIDATE, BASELINE, BASELINE, CANDIDATE]


def test_selector_baseline_is_blocked_after_the_redesign_with_the_site_named(before, after):
    _, _, d = before
    harbor = next(s for s in d["slices"] if s["kind"] == "site")
    # Identical behaviour on 11 tasks: no block, but at look 1 of 12 too few tasks to pass.
    assert harbor["verdict"] == "insufficient_evidence", d["reasons"]
    assert harbor["candidate"]["success"] == harbor["baseline"]["success"] >= 0.9
    assert d["verdict"] == "insufficient_evidence"  # one site is not a release sample

    tasks, ev, d = after
    assert d["verdict"] == "block"
    assert any(r.startswith("site=harbor:") for r in d["reasons"]), d["reasons"]
    assert d["overall"][BASELINE]["success"] >= 0.9  # the tasks stayed solvable
    row = decision_row(
        d,
        task_set={"kind": "release"},
        candidate=CANDIDATE_AGENT.manifest,
        environment={},
        day=AFTER.date(),
        dataset_revision="tasks@x",
    )
    df = frame("release_decision", [row])
    assert df.loc[0, "verdict"] == "block" and "harbor" in df.loc[0, "markdown"]
    runs = frame("candidate_runs", ev.runs)
    assert (runs[runs["counted"]]["role"] == CANDIDATE).sum() == len(tasks)


def test_environment_failures_are_rerun_and_every_attempt_is_kept(after):
    _, ev, d = after
    first = [s for s in ev.scores if s["attempt"] == 0]
    assert first and all(s["excluded"] and s["failure_class"] == "site_down" for s in first)
    assert all(not s["counted"] for s in first)  # kept on the record, not counted
    reruns = [s for s in ev.scores if s["attempt"] == 1]
    assert len(reruns) == len(first) and all(s["counted"] for s in reruns)
    assert len({s["run_id"] for s in ev.scores}) == len(ev.scores)  # no attempt overwritten
    assert d["sample_counts"]["reruns"] == len(reruns)


def test_tasks_of_a_drifted_site_are_marked_and_not_gated(harbor_today):
    from newsbench_dagster.core.analytics.drift import gating_of
    from newsbench_dagster.core.release.plan import build_task_set
    from newsbench_dagster.core.tasks.contract import validate_task

    _, tasks, _ = harbor_today
    ts = build_task_set([], [], tasks, heldout_n=len(tasks), seed=0, drifted={"harbor": ["x"]})
    assert ts.tasks and all(g["accuracy"] == "excluded" for g in ts.gating.values())
    assert all(g["reason"] == "drift: harbor" for g in ts.gating.values())
    assert all(gating_of(t)["accuracy"] == "excluded" for t in ts.tasks)
    for t in ts.tasks:
        validate_task(t)  # the mark keeps the task valid against its schema
    clean = build_task_set([], [], tasks, heldout_n=len(tasks), seed=0)
    assert {g["accuracy"] for g in clean.gating.values()} == {"gated"}
    assert clean.revision != ts.revision  # the dataset revision says the tasks differ


def test_each_look_draws_new_held_out_tasks_until_the_reserve_runs_out():
    """A later look of the sequential gate draws from the held-out tasks not run yet: seeded
    (the same draw twice), disjoint from what ran, drift marks kept; an empty draw says the
    set ran out, which the saved task set carries for the replay."""
    from newsbench_dagster.core.release.plan import build_task_set

    tasks = [
        {"id": f"t{i}", "site": "harbor", "intent": "find_top_headline", "day": "2026-12-01"}
        for i in range(7)
    ]

    def planned(**kw):
        return build_task_set([], [], tasks, heldout_n=2, seed=3, **kw)

    ts, again = planned(), planned()
    assert len(ts.tasks) == 2 and len(ts.reserve) == len(tasks) - 2
    second = ts.draw_look(2, 2, seed=3)
    assert [t["id"] for t in second] == [t["id"] for t in again.draw_look(2, 2, seed=3)]
    assert len(second) == 2 and not {t["id"] for t in second} & {t["id"] for t in ts.tasks[:2]}
    assert all(ts.gating[t["id"]]["look"] == 2 for t in second)
    assert ts.description["task_ids"] == sorted(t["id"] for t in ts.tasks)
    rest = ts.draw_look(3, len(tasks), seed=3)
    assert len(ts.tasks) == len(tasks) and len(rest) == len(tasks) - 4
    assert not ts.saved("c", "b")["ran_out"]
    assert ts.draw_look(4, 2, seed=3) == [] and ts.saved("c", "b")["ran_out"]

    drifted = planned(drifted={"harbor": ["template changed"]})
    late = drifted.draw_look(2, 2, seed=3)
    assert all(drifted.gating[t["id"]]["accuracy"] == "excluded" for t in late)
