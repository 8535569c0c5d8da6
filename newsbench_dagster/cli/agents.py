"""`newsbench agents ...`: list the manifests in agents/, try one agent on today's tasks of the
embedded newsroom (no Dagster, no warehouse)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Column, Table

from newsbench_dagster.cli.common import (
    DEFAULT_PORT,
    AtOption,
    PortOption,
    agent,
    allowlist,
    console,
    day_of,
    err,
    fail,
    instant,
    print_passed,
    run_scored,
    run_settings,
    running_newsroom,
    verdict_of,
)
from newsbench_dagster.paths import AGENTS_DIR, ARTIFACTS_DIR

app = typer.Typer(
    help="Agent manifests in agents/: list them, try one on today's tasks.", no_args_is_help=True
)


@app.command("list")
def agents_list(
    directory: Annotated[Path, typer.Option(help="Manifest directory.")] = AGENTS_DIR,
) -> None:
    """Every agent manifest: its version (name@version+content hash), adapter, channel,
    model and prompt hash (the one the release decision records; "-" and why for a manifest
    without a prompt). A broken manifest is listed as BROKEN with its error (exit 1): the
    pipeline skips it."""
    from newsbench_dagster.core.agents.protocol import scan_manifests

    if not directory.is_dir():
        fail(f"{directory}: no such directory")
    found = scan_manifests(directory)
    manifests = found.manifests
    table = Table("adapter", "channel", "model", "prompt hash", "description")
    # The version is what `gate --candidate` takes: whole, never cut.
    longest = max((len(m.agent_version) for m in manifests), default=0)
    table.columns.insert(0, Column("agent version", min_width=longest, overflow="fold"))
    for m in manifests:
        table.add_row(
            m.agent_version,
            m.adapter,
            m.channel,
            m.model or "-",
            _prompt_hash(m),
            m.description or "",
        )
    for b in found.broken:
        table.add_row(f"BROKEN {b.path.name}", "-", b.channel or "?", "-", "-", b.error)
    console.print(table)
    if found.broken:
        for line in found.warnings():
            err.print(line, highlight=False, soft_wrap=True)
        raise typer.Exit(1)


def _prompt_hash(manifest) -> str:
    """The manifest's prompt hash (as `release_decision.prompt_hash`), or "-" and why not."""
    if manifest.prompt_hash:
        return manifest.prompt_hash
    # A model agent without `prompt:` runs on its adapter's built-in prompt; others have none.
    return "- (adapter's default)" if manifest.model else "- (no model, no prompt)"


@app.command("try")
def agents_try(
    manifest: Annotated[Path, typer.Argument(help="The agent's manifest (YAML).")],
    site: Annotated[list[str], typer.Option(help="Site key (repeatable; default: all).")] = [],  # noqa: B006
    intent: Annotated[
        list[str], typer.Option(help="Intent (repeatable; default: every intent).")
    ] = [],  # noqa: B006
    tasks: Annotated[int, typer.Option(help="At most this many tasks per site.")] = 4,
    sample: Annotated[
        int | None,
        typer.Option(
            help="Run a seeded sample of this size (stratified by site, intent, language)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="The sample's seed.")] = 0,
    trials: Annotated[int, typer.Option(help="Runs of each task.")] = 1,
    concurrency: Annotated[int, typer.Option(help="Browser contexts in flight.")] = 2,
    artifacts: Annotated[Path, typer.Option(help="Artifact folder.")] = ARTIFACTS_DIR,
    port: PortOption = DEFAULT_PORT,
    at: AtOption = None,
) -> None:
    """Run one agent on today's tasks of the embedded newsroom and print how each run was
    scored, without Dagster or the warehouse: the quickest way to see an agent through the
    harness (failure classes, answers, artifacts). With --at, the newsroom is frozen at that
    instant and the tasks are that instant's: any hour's runs can be reproduced."""
    from newsbench_dagster.core.artifacts import LocalArtifactStore
    from newsbench_dagster.core.harness.build import build_runner
    from newsbench_dagster.core.scoring.judgement import why
    from newsbench_dagster.core.tasks.intents import ALL_INTENTS
    from newsbench_dagster.core.tasks.produce import todays_tasks
    from newsbench_dagster.core.tasks.sampling import pick, stratified_sample
    from newsbench_dagster.core.web.network import Fetcher

    built = agent(manifest)
    registry = allowlist(site, intent)
    frozen = instant(at)
    day = day_of(frozen)
    with running_newsroom(port, frozen) as world:
        todo: list[dict] = []
        with Fetcher(world.routing, registry.allowed_origins) as fetcher:
            for key in site or registry.keys:
                made = todays_tasks(registry, fetcher, day, [key], tuple(intent) or ALL_INTENTS)
                todo += made[:tasks]
        if not todo:
            fail("no tasks: the feeds gave nothing for these sites and intents")
        if sample is not None:
            drawn = stratified_sample(todo, sample, seed)
            todo, task_set = pick(todo, drawn), {"kind": "sample", **drawn.as_dict()}
        else:
            task_set = {"kind": "full", "n": len(todo), "task_ids": sorted(t["id"] for t in todo)}
        runner = build_runner(
            [built],
            world=world,
            store=LocalArtifactStore(artifacts),
            registry=registry,
            settings=run_settings(trials=trials, concurrency=concurrency, task_set=task_set),
        )
        rows, scores = run_scored(runner, todo, day, built.manifest.agent_version, trials)
    table = Table("site", "intent", "result", "class", "reward", "answer s", "steps")
    table.add_column("run", min_width=max(len(r["run_id"]) for r in rows), overflow="fold")
    table.add_column("why", ratio=1, overflow="fold")  # the rest of the width
    for row in rows:
        score = scores[row["run_id"]]
        table.add_row(
            row["site"],
            row["intent"],
            verdict_of(score),
            score["failure_class"] or "",
            f"{score['reward']:.3f}" if score.get("reward") is not None else "",
            f"{row['answer_seconds']:.1f}" if row["answer_seconds"] is not None else "",
            str(row["steps"]),
            row["run_id"],
            why(score),
        )
    console.print(table)
    _print_artifact_folders(rows)
    if not print_passed(scores, rows=rows):
        raise typer.Exit(1)


def _print_artifact_folders(rows: list[dict]) -> None:
    """Each run's artifact folder, whole, one per line (a table cell would cut or break a
    path, and a path is for copying)."""
    from newsbench_dagster.core.artifacts import local_path

    folders = []
    for row in rows:
        uri = row["artifacts"].get("run")
        if uri:
            path = local_path(uri)  # another store's URI is shown as it is
            folders.append(str(path.parent) if path else uri.rsplit("/", 1)[0])
    if folders:
        console.print("artifacts (a folder per run):", highlight=False)
    for folder in folders:
        console.print(f"  {folder}", markup=False, highlight=False, soft_wrap=True)
