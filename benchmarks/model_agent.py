"""A real model agent measured, not assumed: SmolLM2-135M-Instruct (agents/smollm2-tools.yaml:
llama.cpp's server started by the harness, the openai_tools loop) on a seeded, stratified sample
of the frozen newsroom's tasks (every site and intent), in real Chromium, scored by the oracles.

It prints success per intent with 95 % Wilson intervals, tokens per task, seconds per model
call, the failure classes; test-retest (temperature 0, the same tasks again: does the answer
repeat? temperature 0.7, `--trials` runs of `--retest` tasks: how often does the verdict flip
between trials of a task?); the efficiency term the runs got under the reward's token cap and
under others; whether the model reads before it acts (each valid `goto`'s target grounded in
the task or an earlier tool result, or invented; how many tool results reached each prompt);
every answer the oracle passed beside the newsroom's truth for its task (so a
false pass shows); and last `model agent: runs R, scored S, environment failures E, capped C,
median tokens/task T, median s/call P` (one line).
Scored: runs that ended in success or in an agent failure class (not excluded); capped: runs
ended by a model call's token or time cap (runaway_output). `--check` exits 1 unless S = R and
E = 0.

    .venv/bin/python benchmarks/model_agent.py --check     # about 8 min on 2 cores
    .venv/bin/python benchmarks/model_agent.py --sample 26 --retest 6 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from common import FROZEN_AT, frozen_newsroom, parse_args, polled_tasks, run_tasks, sites
from oracle_truth import World as Truth
from oracle_truth import truth_and_wrong

from newsbench_dagster.core.agents.protocol import build_agent, load_manifest
from newsbench_dagster.core.analytics.stats import wilson
from newsbench_dagster.core.harness.settings import RunSettings
from newsbench_dagster.core.scoring.failures import AGENT_FAILURES, SUCCESS
from newsbench_dagster.core.scoring.reward import efficiency_of, efficiency_parts
from newsbench_dagster.core.scoring.score import score_run
from newsbench_dagster.core.tasks.intents import READ_INTENTS
from newsbench_dagster.core.tasks.sampling import pick, stratified_sample
from newsbench_dagster.paths import AGENTS_DIR

TOKEN_CAPS = (5_000, 20_000, 50_000, 100_000)  # the reward's efficiency cap, and others


def agent_at(manifest_path: Path, temperature: float):
    manifest = load_manifest(manifest_path)
    params = {**manifest.params, "temperature": temperature}
    version = f"{manifest.version}-t{temperature:g}"
    return build_agent(manifest.model_copy(update={"params": params, "version": version}))


def evaluate(agent, tasks, trials, world, registry) -> list[tuple[dict, dict]]:
    """(row, score) of every run; one run at a time (the model serves one call at a time)."""
    settings = RunSettings(trials=trials, concurrency=1, screenshot=False, artifacts=())
    rows = run_tasks(
        [agent], tasks, FROZEN_AT.date(), world=world, registry=registry, settings=settings
    )
    by_id = {t["id"]: t for t in tasks}
    return [(r, score_run(r, by_id[r["task_id"]])) for r in rows]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _answer_key(row: dict) -> str:
    return json.dumps(row.get("answer"), sort_keys=True, default=str)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--manifest", type=Path, default=AGENTS_DIR / "smollm2-tools.yaml")
    ap.add_argument("--sample", type=int, default=8, help="tasks in the stratified sample")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--retest", type=int, default=2, help="tasks run again for test-retest")
    ap.add_argument("--trials", type=int, default=3, help="trials at temperature 0.7")
    ap.add_argument("--json", type=Path, help="write every run's outcome here")
    ap.add_argument("--check", action="store_true", help="exit 1 unless S = R and E = 0")
    args = parse_args(ap, sample=1, retest=0)
    began = time.monotonic()
    registry = sites()
    with frozen_newsroom() as (server, world):
        every = polled_tasks(registry, world, FROZEN_AT.date())
        drawn = stratified_sample(every, args.sample, args.seed)
        tasks = pick(every, drawn)
        print(
            f"{len(tasks)} of {len(every)} tasks (seed {args.seed}), manifest "
            f"{args.manifest.name}, newsroom frozen at {FROZEN_AT.isoformat()}",
            flush=True,
        )
        main_runs = evaluate(agent_at(args.manifest, 0.0), tasks, 1, world, registry)
        retest = tasks[: args.retest]
        again = evaluate(agent_at(args.manifest, 0.0), retest, 1, world, registry) if retest else []
        warm = (
            evaluate(agent_at(args.manifest, 0.7), retest, args.trials, world, registry)
            if retest
            else []
        )
        truth = Truth(server.newsroom, FROZEN_AT)
    runs = main_runs + again + warm

    # -- success per intent ----------------------------------------------------------------------
    print(f"\n{'intent':<26} {'n':>3} {'pass':>4}  success [95% CI]")
    per_intent: dict[str, list[bool]] = defaultdict(list)
    for row, score in main_runs:
        per_intent[row["intent"]].append(bool(score["success"]))
    for intent, oks in sorted(per_intent.items()):
        lo, hi = wilson(sum(oks), len(oks))
        print(
            f"{intent:<26} {len(oks):>3} {sum(oks):>4}  "
            f"{_pct(sum(oks) / len(oks))} [{_pct(lo)}, {_pct(hi)}]"
        )
    n, k = len(main_runs), sum(bool(s["success"]) for _, s in main_runs)
    lo, hi = wilson(k, n)
    print(f"{'all':<26} {n:>3} {k:>4}  {_pct(k / n if n else None)} [{_pct(lo)}, {_pct(hi)}]")

    # -- cost ------------------------------------------------------------------------------------
    tokens = [r["tokens"] for r, _ in runs]
    calls = [
        c
        for r, _ in runs
        for c in (r.get("adapter") or {}).get("model_loop", {}).get("call_seconds", [])
    ]
    completion = [
        c
        for r, _ in runs
        for c in (r.get("adapter") or {}).get("model_loop", {}).get("completion_tokens", [])
    ]
    med_tokens = statistics.median(tokens) if tokens else 0
    med_call = statistics.median(calls) if calls else 0.0
    print(
        f"\ntokens per task: median {med_tokens:.0f}, max {max(tokens, default=0)}; "
        f"completion tokens per call: median {statistics.median(completion or [0]):.0f}, "
        f"max {max(completion, default=0)}"
    )
    print(
        f"seconds per model call: median {med_call:.2f}, max {max(calls, default=0):.2f} "
        f"({len(calls)} calls); steps per task: median "
        f"{statistics.median([r['steps'] for r, _ in runs] or [0]):.0f}"
    )

    # -- does the model read before it acts? ----------------------------------------------------
    loops = [(r.get("adapter") or {}).get("model_loop") or {} for r, _ in runs]
    grounded = sum((loop.get("goto") or {}).get("grounded", 0) for loop in loops)
    invented = sum((loop.get("goto") or {}).get("invented", 0) for loop in loops)
    held = [n for loop in loops for n in loop.get("tool_results_sent", [])]
    share = _pct(grounded / (grounded + invented) if grounded + invented else None)
    print(
        f"\ngoto calls: {grounded + invented} (grounded {grounded}: in the task or an earlier "
        f"tool result; invented {invented}), grounded share {share}; tool results in a "
        f"prompt: max {max(held, default=0)}, calls with any {sum(n > 0 for n in held)}/"
        f"{len(held)}; runs with a tool call {sum(loop.get('tool_calls', 0) > 0 for loop in loops)}"
        f"/{len(loops)}"
    )

    # -- the efficiency term under several token caps --------------------------------------------
    print("\nefficiency E (0.4 steps + 0.4 tokens + 0.2 requests) by token cap, median over runs:")
    for cap in TOKEN_CAPS:
        es = [
            efficiency_of(efficiency_parts(r["steps"], r["tokens"], r["requests"], (30, cap, 60)))
            for r, _ in runs
        ]
        zero = sum(r["tokens"] >= cap for r, _ in runs)
        print(
            f"  cap {cap:>7}: E median {statistics.median(es or [0]):.2f}; "
            f"token part zero in {zero}/{len(runs)} runs"
        )

    # -- failure classes -------------------------------------------------------------------------
    classes = Counter(s["failure_class"] for _, s in runs)
    print("\nfailure classes (all runs):", ", ".join(f"{c} {k}" for c, k in classes.most_common()))

    # -- test-retest -----------------------------------------------------------------------------
    if retest:
        first = {r["task_id"]: r for r, _ in main_runs}
        same = [_answer_key(first[r["task_id"]]) == _answer_key(r) for r, _ in again]
        print(f"\ntest-retest at temperature 0: the same answer in {sum(same)}/{len(same)} task(s)")
        verdicts: dict[str, list[bool]] = defaultdict(list)
        for row, score in warm:
            verdicts[row["task_id"]].append(bool(score["success"]))
        flips = sum(len(set(v)) > 1 for v in verdicts.values())
        p = [sum(v) / len(v) for v in verdicts.values()]
        within = statistics.mean(x * (1 - x) for x in p) if p else 0.0
        print(
            f"temperature 0.7, {args.trials} trials: the verdict flipped in {flips}/"
            f"{len(verdicts)} task(s); per-task success {[round(x, 2) for x in p]}, "
            f"mean within-task variance p(1-p) {within:.3f}"
        )

    # -- every pass beside the truth -------------------------------------------------------------
    print("\nanswers the oracle passed, beside the newsroom's truth:")
    by_id = {t["id"]: t for t in tasks}
    passed = [(r, s) for r, s in runs if s["success"]]
    for row, _ in passed:
        found = None
        if row["intent"] in READ_INTENTS:
            found = truth_and_wrong(truth, by_id[row["task_id"]])
        right = found[0] if found else "(state-changing or no truth: the world's log decided)"
        print(
            f"  {row['intent']} {row['task_id']}\n    answer {json.dumps(row['answer'])}\n"
            f"    truth  {json.dumps(right, default=str)}"
        )
    if not passed:
        print("  none")

    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "run_id": r["run_id"],
                        "task_id": r["task_id"],
                        "intent": r["intent"],
                        "agent": r["agent_version"],
                        "trial": r["trial"],
                        "class": s["failure_class"],
                        "success": s["success"],
                        "tokens": r["tokens"],
                        "answer": r["answer"],
                        "error": r["error"],
                        "model_loop": (r.get("adapter") or {}).get("model_loop"),
                    }
                    for r, s in runs
                ],
                default=str,
                indent=1,
            )
        )

    env = sum(bool(r["env_failure"]) for r, _ in runs)
    scored = sum(
        s["failure_class"] in {SUCCESS, *AGENT_FAILURES} and not s["excluded"] for _, s in runs
    )
    capped = classes.get("runaway_output", 0)
    print(f"\nelapsed: {time.monotonic() - began:.0f} s")
    print(
        f"model agent: runs {len(runs)}, scored {scored}, environment failures {env}, "
        f"capped {capped}, median tokens/task {med_tokens:.0f}, median s/call {med_call:.2f}"
    )
    if args.check and (scored != len(runs) or env):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
