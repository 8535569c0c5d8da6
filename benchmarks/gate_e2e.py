"""Gate end to end: the release gate reaching its decisions on the embedded default world.

Three evaluations on the newsroom frozen at one instant, with real Chromium, the real harness
and the real checkers, at the release policy's defaults (`core/release/policy.py`):

1. A/A: the reference agent against a renamed copy of itself, through Dagster's candidate
   job, one materialization per look while the evidence is insufficient (what the
   `release_looks` sensor requests): right when pass or insufficient evidence, never block.
2. baseline: the selector baseline (fixed selectors of a layout the newsroom has redesigned)
   through `newsbench gate`: right when block with a site named in the reasons.
3. degraded: the reference answering a share of one intent's tasks wrong on purpose
   (`params.wrong_intent` / `wrong_share`, seeded by the task), through Dagster: right when
   block, with the held-out runs it spent at most the 95th percentile the gate's simulation
   (`gate_power.py`) spends on a 5-point regression, and the share large enough that the
   expected overall regression (share x the intent's part of the gated tasks) is 5 points.

Printed: a table (evaluation, path, verdict, looks, runs, held-out runs, minutes, reasons),
then as the last line

    gate e2e: A/A VERDICT, baseline VERDICT, degraded VERDICT, runs R, minutes M

`--check` exits 1 unless all three are right.

    uv run python benchmarks/gate_e2e.py --check      # the defaults: tens of minutes
    uv run python benchmarks/gate_e2e.py --smoke      # one site, a small budget: a minute
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import yaml
from common import FROZEN_AT, SEED, frozen_newsroom, parse_args
from dagster import DagsterInstance
from gate_power import SHIFT, noisy, simulate, synthetic_population

from newsbench_dagster.core.agents.protocol import AgentManifest
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.release.plan import task_set_key
from newsbench_dagster.core.release.policy import Policy
from newsbench_dagster.definitions import RESOURCES_LOCAL, build_definitions
from newsbench_dagster.defs.partitions import agent_version_partitions
from newsbench_dagster.paths import AGENTS_DIR
from newsbench_dagster.resources import (
    AgentRegistryResource,
    ArtifactStoreResource,
    BrowserResource,
    NewsroomResource,
    ReleaseResource,
    duckdb_warehouse,
)

REFERENCE = yaml.safe_load((AGENTS_DIR / "reference.yaml").read_text(encoding="utf-8"))


def _candidate(name: str, **params) -> dict:
    """The reference's manifest as a candidate of another name (`params`: its wrong_*)."""
    manifest = {**REFERENCE, "name": name, "version": "0.2.0", "channel": "candidate"}
    if params:
        manifest["params"] = params
    return manifest


def dagster_gate(manifest: dict, release: dict, port: int, work: Path) -> dict:
    """`manifest` against the reference through the candidate job, one materialization per
    look until the evaluation stops: the decision's figures."""
    agents = work / "agents"
    agents.mkdir(parents=True)
    (agents / "reference.yaml").write_text(yaml.safe_dump(REFERENCE))
    (agents / "candidate.yaml").write_text(yaml.safe_dump(manifest))
    version = AgentManifest(**manifest).agent_version
    db, artifacts = work / "wh.duckdb", work / "artifacts"
    defs = build_definitions(
        {
            **RESOURCES_LOCAL,
            "io_manager": duckdb_warehouse(str(db)),
            "newsroom": NewsroomResource(port=port, seed=SEED),
            "browser": BrowserResource(artifacts=[], screenshot=False),
            "artifacts": ArtifactStoreResource(root=str(artifacts)),
            "agents": AgentRegistryResource(directory=str(agents)),
            "release": ReleaseResource(**release),
        }
    )
    job = defs.resolve_job_def("candidate_job")
    started = time.perf_counter()
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions(agent_version_partitions.name, [version])
        while True:
            result = job.execute_in_process(
                partition_key=version, instance=instance, raise_on_error=False
            )
            # A blocking gate check failing is the gate's verdict (block), not an error.
            failed = {e.step_key for e in result.all_events if e.is_step_failure}
            if not result.success and not all(k.endswith("_gate") for k in failed):
                raise RuntimeError(f"candidate job failed for {version}: steps {sorted(failed)}")
            with duckdb.connect(str(db), read_only=True) as con:
                verdict, reasons, sequential = con.execute(
                    "SELECT verdict, reasons, sequential FROM newsbench.release_decision"
                ).fetchone()
                runs = con.execute(
                    "SELECT task_id, counted FROM newsbench.candidate_runs"
                ).fetchall()
            seq = json.loads(sequential)
            print(f"  {manifest['name']}: look {seq['look']} {verdict}", flush=True)
            if seq["stopped"] != "open":
                break
    saved = LocalArtifactStore(artifacts).read_json(task_set_key(version))
    return _figures(verdict, json.loads(reasons), seq, runs, saved, started)


def cli_gate(candidate: str, options: list[str], port: int, work: Path) -> dict:
    """`newsbench gate` in a process of its own on the frozen newsroom: the decision."""
    started = time.perf_counter()
    args = ["gate", "--candidate", candidate, "--baseline", "reference", "--json"]
    args += ["--artifacts", str(work), "--port", str(port), "--at", FROZEN_AT.isoformat()]
    done = subprocess.run(
        [sys.executable, "-c", "from newsbench_dagster.cli import main; main()", *args, *options],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1, 3):
        raise RuntimeError(f"newsbench gate exited {done.returncode}")
    decision = json.loads(done.stdout[done.stdout.index("{") :])
    seq = decision["sequential"]
    saved = json.loads(next(work.rglob("task_set.json")).read_text())
    # Every attempt it ran (reruns of environment failures too): each left a run.json.
    runs = [(json.loads(p.read_text())["task_id"], True) for p in work.rglob("run.json")]
    return _figures(decision["verdict"], decision["reasons"], seq, runs, saved, started)


def _figures(verdict, reasons, seq, runs, saved, started) -> dict:
    heldout = {i for i, g in saved["gating"].items() if g["suite"] == "heldout"}
    return {
        "verdict": verdict,
        "reasons": reasons,
        "looks": seq["look"],
        "runs": len(runs),
        "heldout_runs": sum(1 for task, counted in runs if counted and task in heldout),
        "minutes": (time.perf_counter() - started) / 60,
        "gating": saved["gating"],
        "tasks": saved["tasks"],
    }


def expected_regression(figures: dict, intent: str, share: float) -> float:
    """The overall success regression the wrong answers make: share x the part of the gated
    held-out and regression tasks of the intent (the reference answers nearly all right)."""
    gated = [t for t in figures["tasks"] if figures["gating"][t["id"]].get("accuracy") == "gated"]
    return share * sum(t["intent"] == intent for t in gated) / max(1, len(gated))


def simulated_p95(policy: Policy, replicates: int, seed: int) -> float:
    """The 95th percentile of the held-out runs the gate's simulation spends on a 5-point
    regression at `policy`, the worse of gate_power's two worlds."""
    rng = np.random.default_rng(seed)
    base = synthetic_population()
    worst = 0.0
    for pop in (base, noisy(base)):
        spent = [simulate(pop, SHIFT, rng, policy)[1] for _ in range(replicates)]
        worst = max(worst, float(np.percentile(spent, 95)))
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 unless all three are right")
    ap.add_argument("--wrong-intent", default="extract_article_metadata")
    ap.add_argument("--wrong-share", type=float, default=0.5)
    ap.add_argument("--replicates", type=int, default=200, help="simulations for the p95")
    ap.add_argument("--sites", help="comma-separated site keys (default: all)")
    ap.add_argument("--intents", help="comma-separated intents (default: all)")
    ap.add_argument("--heldout", type=int, help="held-out tasks per look (policy's)")
    ap.add_argument("--looks", type=int, help="max_looks (policy's)")
    ap.add_argument("--trials", type=int, help="trials per task and agent (policy's)")
    ap.add_argument("--slice-min-tasks", type=int, help="tasks a gated slice needs (policy's)")
    args = parse_args(
        ap,
        sites="harbor",
        intents="find_top_headline,extract_article_metadata",
        heldout=3,
        looks=1,
        trials=1,
        slice_min_tasks=5,
        replicates=6,
    )
    given = {
        "sites": args.sites.split(",") if args.sites else None,
        "intents": args.intents.split(",") if args.intents else None,
        "heldout_n": args.heldout,
        "max_looks": args.looks,
        "trials": args.trials,
        "slice_min_tasks": args.slice_min_tasks,
    }
    release = {k: v for k, v in given.items() if v is not None}
    policy = ReleaseResource(**release).policy()
    # The same policy for `newsbench gate`, in its options.
    flags = {
        "sites": "--site",
        "intents": "--intent",
        "heldout_n": "--heldout",
        "max_looks": "--max-looks",
        "trials": "--trials",
        "slice_min_tasks": "--slice-min-tasks",
    }
    options = [
        f"{flags[k]}={x}" for k, v in release.items() for x in (v if isinstance(v, list) else [v])
    ]
    print(f"policy: {json.dumps(release) if release else 'the defaults'}", flush=True)

    started = time.perf_counter()
    results: dict[str, dict] = {}
    with frozen_newsroom() as (server, _), tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print("A/A through Dagster's candidate job", flush=True)
        results["A/A"] = dagster_gate(
            _candidate("reference-next"), release, server.port, work / "aa"
        )
        print("the selector baseline through newsbench gate", flush=True)
        results["baseline"] = cli_gate("selector-baseline", options, server.port, work / "sel")
        print("degraded through Dagster's candidate job", flush=True)
        wrong = {"wrong_intent": args.wrong_intent, "wrong_share": args.wrong_share}
        results["degraded"] = dagster_gate(
            _candidate("reference-worse", **wrong), release, server.port, work / "worse"
        )
    p95 = simulated_p95(policy, args.replicates, seed=42)
    effect = expected_regression(results["degraded"], args.wrong_intent, args.wrong_share)

    print(
        "\n| evaluation | path | verdict | looks | runs | held-out runs | minutes | reasons |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    paths = {"A/A": "dagster", "baseline": "newsbench gate", "degraded": "dagster"}
    for name, r in results.items():
        why = "; ".join(r["reasons"])[:120]
        print(
            f"| {name} | {paths[name]} | {r['verdict']} | {r['looks']} | {r['runs']} | "
            f"{r['heldout_runs']} | {r['minutes']:.1f} | {why} |"
        )
    print(
        f"degraded: {args.wrong_share:.0%} of {args.wrong_intent} answered wrong, expected "
        f"regression {effect:.1%}; simulated p95 of held-out runs for -5 pts: {p95:.0f}"
    )
    aa, sel, worse = results["A/A"], results["baseline"], results["degraded"]
    right = {
        "A/A": aa["verdict"] in ("pass", "insufficient_evidence"),
        "baseline": sel["verdict"] == "block"
        and any(r.startswith("site=") for r in sel["reasons"]),
        "degraded": worse["verdict"] == "block" and worse["heldout_runs"] <= p95,
    }
    if effect < SHIFT:
        print(
            f"the degraded candidate regresses {effect:.1%}, less than {SHIFT:.0%}: raise the share"
        )
        right["degraded"] = False
    for name, ok in right.items():
        if not ok:
            print(f"wrong: {name} {results[name]['verdict']}", flush=True)
    runs = sum(r["runs"] for r in results.values())
    minutes = (time.perf_counter() - started) / 60
    print(
        f"gate e2e: A/A {aa['verdict']}, baseline {sel['verdict']}, degraded {worse['verdict']}, "
        f"runs {runs}, minutes {minutes:.1f}"
    )
    if args.check and not all(right.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
