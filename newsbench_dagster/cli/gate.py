"""`newsbench gate`: any CI system's release gate. It decides with the release policy
(`core.release.policy`: the same defaults, the same baseline rule and the same functions as the
pipeline's `release_decision`) and exits with the verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from newsbench_dagster.cli.common import (
    DEFAULT_PORT,
    AtOption,
    PortOption,
    allowlist,
    console,
    day_of,
    err,
    fail,
    instant,
    progress,
    resolve_manifest,
    run_settings,
    running_newsroom,
)
from newsbench_dagster.core.release.policy import Policy
from newsbench_dagster.paths import AGENTS_DIR, ARTIFACTS_DIR, SUITES_DIR, WAREHOUSE_FILE

GATE_EXIT = {"pass": 0, "block": 1, "insufficient_evidence": 3}


def _default(name: str) -> str:
    return f"(policy default: {Policy.model_fields[name].default})"


def gate(
    candidate: Annotated[str, typer.Option(help="Candidate: manifest path, version or name.")],
    baseline: Annotated[
        str | None,
        typer.Option(
            help="Baseline: manifest path, version or name (default: the main-channel manifest "
            "of the candidate's name, else the only one)."
        ),
    ] = None,
    site: Annotated[list[str], typer.Option(help="Site key (repeatable; default: all).")] = [],  # noqa: B006
    intent: Annotated[list[str], typer.Option(help="Intent (repeatable; default: all).")] = [],  # noqa: B006
    heldout: Annotated[
        int | None,
        typer.Option(
            help=f"Held-out tasks drawn from today's feeds per look {_default('heldout_n')}."
        ),
    ] = None,
    max_looks: Annotated[
        int | None,
        typer.Option(
            help="Looks of the sequential gate at most: while the evidence is insufficient, "
            f"each look draws --heldout more tasks {_default('max_looks')}."
        ),
    ] = None,
    trials: Annotated[
        int | None, typer.Option(help=f"Runs of each task per agent {_default('trials')}.")
    ] = None,
    max_reruns: Annotated[
        int | None, typer.Option(help=f"Reruns of an environment failure {_default('max_reruns')}.")
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(help=f"Seed of the held-out draws {_default('seed')}."),
    ] = None,
    slice_min_tasks: Annotated[
        int | None,
        typer.Option(
            help=f"Tasks a slice (a site, an intent...) needs to be gated "
            f"{_default('slice_min_tasks')}."
        ),
    ] = None,
    from_warehouse: Annotated[
        bool,
        typer.Option(
            "--from-warehouse",
            help="Do not run: print the latest decision the pipeline stored for the candidate.",
        ),
    ] = False,
    recompute: Annotated[
        bool,
        typer.Option(
            help="With --from-warehouse: decide again from the stored runs and scores with this "
            "policy (the pipeline's own decision function), and say if the stored verdict differs."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the decision as JSON.")] = False,
    agents_dir: Annotated[Path, typer.Option("--agents", help="Manifest directory.")] = AGENTS_DIR,
    artifacts: Annotated[Path, typer.Option(help="Artifact folder.")] = ARTIFACTS_DIR,
    port: PortOption = DEFAULT_PORT,
    at: AtOption = None,
    database: Annotated[Path, typer.Option(help="Warehouse (with --from-warehouse).")] = (
        WAREHOUSE_FILE
    ),
) -> None:
    """Decide whether CANDIDATE may ship instead of BASELINE, and exit with the verdict: 0
    pass, 1 block, 3 insufficient evidence (2: bad input). Both run the same tasks (the
    regression suite, a held-out draw from today's feeds, the adversarial slice), interleaved,
    on the embedded newsroom; the decision record is printed (Markdown, or --json). With --at,
    the newsroom is frozen at that instant and the feeds are that instant's: a gate's
    evaluation can be repeated on the same world."""
    from pydantic import ValidationError

    from newsbench_dagster.core.agents.protocol import scan_manifests
    from newsbench_dagster.core.errors import ConfigError
    from newsbench_dagster.core.release.policy import choose_baseline

    given = {
        "sites": site or None,
        "intents": intent or None,
        "heldout_n": heldout,
        "max_looks": max_looks,
        "trials": trials,
        "max_reruns": max_reruns,
        "seed": seed,
        "slice_min_tasks": slice_min_tasks,
    }
    try:
        policy = Policy(**{k: v for k, v in given.items() if v is not None})
    except ValidationError as e:
        fail(f"bad gate option: {e.errors()[0]['loc'][0]}: {e.errors()[0]['msg']}", 2)
    cand = resolve_manifest(candidate, agents_dir)
    if baseline is not None:
        base = resolve_manifest(baseline, agents_dir)
    else:
        try:
            usable = scan_manifests(agents_dir).manifests  # broken ones set aside
            base = choose_baseline(cand, usable, policy.baseline)
        except ConfigError as e:
            fail(str(e), 2)
    frozen = instant(at)
    if frozen is not None and from_warehouse:
        fail("--at freezes the newsroom a gate runs on; --from-warehouse runs nothing", 2)
    if cand.agent_version == base.agent_version:
        fail(f"candidate and baseline are the same version ({cand.agent_version})", 2)
    if from_warehouse and recompute:
        decision = _recompute(database, artifacts, cand.agent_version, base.agent_version, policy)
        _print_decision(decision, {"recomputed from": str(database)}, as_json)
        verdict = decision["verdict"]
    elif from_warehouse:
        verdict = _print_stored(database, cand.agent_version, base.agent_version, as_json)
    else:
        registry = allowlist(site, intent)
        decision, task_set = _run(cand, base, policy, registry, artifacts, port, frozen)
        _print_decision(
            {**decision, "task_set": task_set.description},
            {"dataset revision": task_set.revision},
            as_json,
        )
        verdict = decision["verdict"]
    raise typer.Exit(GATE_EXIT[verdict])


def _run(cand, base, policy: Policy, registry, artifacts: Path, port: int, at=None):  # noqa: PLR0913
    """Both agents on the release task set of today's feeds (or those of the instant `at`,
    the newsroom frozen there), look by look, as `candidate_runs` runs them
    (`core.release.looks`)."""
    from newsbench_dagster.core.artifacts import LocalArtifactStore
    from newsbench_dagster.core.release.looks import run_release
    from newsbench_dagster.core.release.plan import plan_task_set

    day = day_of(at)
    with running_newsroom(port, at) as world:
        task_set = plan_task_set(
            registry, world, policy, suites_dir=SUITES_DIR, recent=[], day=day, warn=err.print
        )
        if not task_set.tasks:
            fail("no tasks for these sites and intents", 2)
        with progress() as bar:
            # Short enough for a narrow terminal; the decision names the full versions.
            job = bar.add_task(
                f"{cand.name}@{cand.version} vs {base.name}@{base.version} runs",
                total=len(task_set.tasks) * 2 * policy.trials,
            )

            def advance(_row: dict) -> None:  # the total grows as looks draw more tasks
                bar.update(job, advance=1, total=len(task_set.tasks) * 2 * policy.trials)

            _, decision = run_release(
                cand,
                base,
                task_set,
                day,
                policy,
                log=lambda line: err.print(line, highlight=False),
                world=world,
                store=LocalArtifactStore(artifacts),
                registry=registry,
                settings=run_settings(),
                progress=advance,
            )
    return decision, task_set


def _stored(database: Path, candidate: str, baseline: str) -> dict:
    """The latest decision stored for `candidate`, which must have been against `baseline`."""
    from newsbench_dagster.core.analytics.warehouse import WarehouseError, latest_decision

    try:
        found = latest_decision(database, candidate)
    except WarehouseError as e:
        fail(str(e), 2)
    if found is None:
        fail(f"no decision stored for {candidate} in {database}", 2)
    if found["baseline_version"] != baseline:
        fail(
            f"the stored decision for {candidate} compared it with "
            f"{found['baseline_version']}, not {baseline}",
            2,
        )
    return found


def _print_stored(database: Path, candidate: str, baseline: str, as_json: bool) -> str:
    found = _stored(database, candidate, baseline)
    if as_json:
        keep = {k: found[k] for k in ("verdict", "reasons", "decided_at")}
        console.print_json(json.dumps(keep, default=str))
    else:
        console.print(found["markdown"], markup=False, highlight=False)
    return found["verdict"]


def _recompute(database: Path, artifacts: Path, candidate: str, baseline: str, policy: Policy):
    """The decision again, from the runs and scores the pipeline stored and the task set it
    kept, through the pipeline's own function (`decide_saved`)."""
    from newsbench_dagster.core.analytics.drift import drifted_sites
    from newsbench_dagster.core.analytics.warehouse import (
        WarehouseError,
        site_drift_rows,
        stored_evaluation,
    )
    from newsbench_dagster.core.artifacts import LocalArtifactStore
    from newsbench_dagster.core.release.decide import decide_saved
    from newsbench_dagster.core.release.plan import task_set_key

    stored = _stored(database, candidate, baseline)
    saved = LocalArtifactStore(artifacts).read_json(task_set_key(candidate))
    if not isinstance(saved, dict):
        fail(f"no task set for {candidate} in {artifacts} ({task_set_key(candidate)})", 2)
    try:
        runs, scores = stored_evaluation(database, candidate)
    except WarehouseError as e:
        fail(str(e), 2)
    decision = decide_saved(scores, runs, saved, policy, drifted_sites(site_drift_rows(database)))
    if decision["verdict"] != stored["verdict"]:
        err.print(
            f"[yellow]the stored decision ({stored['decided_at']}) was {stored['verdict']}; "
            f"with this policy it is {decision['verdict']}[/]",
            highlight=False,
        )
    return decision


def _print_decision(decision: dict, record: dict, as_json: bool) -> None:
    from newsbench_dagster.core.release.decide import render_markdown

    if as_json:
        console.print_json(json.dumps(decision, default=str))
    else:
        # The Markdown has [brackets] rich would take for markup.
        console.print(render_markdown(decision, record), markup=False, highlight=False)
