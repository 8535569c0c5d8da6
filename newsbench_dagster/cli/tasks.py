"""`newsbench tasks ...`: the curated task suites in suites/ (validate, list, sample, coverage)
and turning a recorded run into a regression task; `tasks schema` prints the task JSON Schema."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

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
    running_newsroom,
    shown,
)
from newsbench_dagster.cli.common import registry as load_registry
from newsbench_dagster.paths import ARTIFACTS_DIR, SUITES_DIR

app = typer.Typer(
    help="Curated task suites in suites/: validate, list, coverage, scaffold from a run; "
    "the news's task pool per site (pool).",
    no_args_is_help=True,
)
SuitesRoot = Annotated[Path, typer.Option("--root", help="Suites directory.")]
SitesFile = Annotated[
    Path | None, typer.Option("--sites", help="The site allowlist (default: sites.yaml).")
]


def _load_suites(root: Path, sites: Path | None):
    from newsbench_dagster.core.tasks.suites import load_suites

    found = load_registry(sites)
    return found, load_suites(shown(root), found.allowed_origins, found.keys)


@app.command("schema")
def tasks_schema() -> None:
    """Print the task JSON Schema (the shipped file, byte for byte)."""
    from importlib import resources

    text = resources.files("newsbench_dagster.core.tasks").joinpath("schemas/task.schema.json")
    sys.stdout.write(text.read_text(encoding="utf-8"))


@app.command("validate")
def tasks_validate(root: SuitesRoot = SUITES_DIR, sites: SitesFile = None) -> None:
    """Check every suite file; print each problem (file, task id, field path, message).

    Exit status: 0 clean (tasks per suite are printed); 1 any problem.
    """
    _, load = _load_suites(root, sites)
    for p in load.problems:
        typer.echo(str(p))
    counts = ", ".join(f"{suite} {n}" for suite, n in load.counts().items())
    if load.problems:
        err.print(
            f"{len(load.problems)} problem(s); {len(load.tasks)} task(s) loaded ({counts})",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)
    table = Table("suite", "tasks")
    for suite, n in load.counts().items():
        table.add_row(suite, str(n))
    console.print(table)
    err.print(f"{len(load.tasks)} task(s), no problems", highlight=False)


@app.command("list")
def tasks_list(
    suite: Annotated[str | None, typer.Option(help="Only this suite.")] = None,
    tag: Annotated[str | None, typer.Option(help="Only tasks with this tag.")] = None,
    intent: Annotated[str | None, typer.Option(help="Only this intent.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    root: SuitesRoot = SUITES_DIR,
    sites: SitesFile = None,
) -> None:
    """List the suites' tasks: id, suite, site, intent, tags, entry URL.

    Only tasks that load; `tasks validate` names the others.
    """
    from newsbench_dagster.core.tasks.suites import SUITES

    if suite is not None and suite not in SUITES:
        fail(f"unknown suite {suite!r}; choose from: {', '.join(SUITES)}", 2)
    _, load = _load_suites(root, sites)
    chosen = [
        t
        for t in load.tasks
        if (suite is None or t.suite == suite)
        and (tag is None or tag in t.tags)
        and (intent is None or t.task["intent"] == intent)
    ]
    if as_json:
        for t in chosen:
            line = {
                "id": t.id,
                "suite": t.suite,
                "site": t.task["site"],
                "intent": t.task["intent"],
                "tags": t.tags,
                "entry_url": t.task["entry_url"],
                "file": t.file,
                "gating": t.gating,
            }
            sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
    else:
        table = Table("id", "suite", "site", "intent", "tags")
        table.add_column("entry URL", overflow="fold")
        for t in chosen:
            table.add_row(
                t.id,
                t.suite,
                t.task["site"],
                t.task["intent"],
                ", ".join(t.tags),
                t.task["entry_url"],
            )
        console.print(table)
    if load.problems:
        err.print(
            f"[yellow]warning:[/] {len(load.problems)} problem(s) left tasks out; "
            "run `newsbench tasks validate`",
            highlight=False,
        )


@app.command("sample")
def tasks_sample(
    n: Annotated[int, typer.Option(help="Sample size.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed: the same pool and seed, the same sample.")] = 0,
    suite: Annotated[str | None, typer.Option(help="Only this suite's tasks.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    root: SuitesRoot = SUITES_DIR,
    sites: SitesFile = None,
) -> None:
    """A PR-sized sample of the suites' tasks, stratified by site, intent and language.

    Seeded and reproducible; --json prints what an evaluation stores with its results (seed,
    task ids, tasks per stratum).
    """
    from newsbench_dagster.core.tasks.sampling import stratified_sample

    if n < 0:
        fail(f"--n must be >= 0, got {n}", 2)
    _, load = _load_suites(root, sites)
    pool = [t.task for t in load.tasks if suite is None or t.suite == suite]
    sample = stratified_sample(pool, n, seed)
    if as_json:
        typer.echo(json.dumps(sample.as_dict()))
        return
    table = Table("site", "intent", "language", "tasks")
    for (site_key, intent_name, language), k in sorted(sample.strata.items()):
        table.add_row(site_key, intent_name, language, str(k))
    console.print(table)
    err.print(f"{len(sample.task_ids)} of {len(pool)} task(s), seed {seed}", highlight=False)


@app.command("coverage")
def tasks_coverage(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    root: SuitesRoot = SUITES_DIR,
    sites: SitesFile = None,
) -> None:
    """What the suites cover: intents x sites x languages, and what they do not.

    Obstacles come from `obstacle:NAME` tags; intents and allowlisted sites without a task are
    listed as missing.
    """
    from newsbench_dagster.core.tasks.suites import coverage

    registry, load = _load_suites(root, sites)
    cov = coverage(load, registry)
    if as_json:
        sys.stdout.write(json.dumps(cov, ensure_ascii=False) + "\n")
        return
    table = Table("intent", "site", "language", "tasks", title="Covered")
    for c in cov["cells"]:
        table.add_row(c["intent"], c["site"], c["language"], str(c["tasks"]))
    console.print(table)
    console.print(f"languages: {', '.join(cov['languages']) or '-'}", highlight=False)
    obstacles = ", ".join(f"{k} ({n})" for k, n in cov["obstacles"].items())
    console.print(f"obstacles: {obstacles or '-'}", highlight=False)
    for what, names in (("intents", cov["missing_intents"]), ("sites", cov["missing_sites"])):
        line = f"{what} with no task: {', '.join(names) or '-'}"
        console.print(line, highlight=False, soft_wrap=True)


@app.command("pool")
def tasks_pool(
    site: Annotated[
        list[str], typer.Option(help="Site key (repeatable; default: every site).")
    ] = [],  # noqa: B006
    intent: Annotated[
        list[str], typer.Option(help="Intent (repeatable; default: every intent).")
    ] = [],  # noqa: B006
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    port: PortOption = DEFAULT_PORT,
    at: AtOption = None,
) -> None:
    """How many tasks the news gives per site today: the day's tasks (what the daily
    evaluation runs) and the held-out reserve beside them, which together are the pool the
    release gate draws its looks from; and whether the gate's default budget fits in it.

    Polls the embedded newsroom now, or frozen at --at. The pipeline records the same figures
    in `news_tasks` (metadata `tasks`, `reserve`, `pool`) for every site and day it polls.
    """
    from collections import Counter

    from newsbench_dagster.core.release.plan import distinct_questions
    from newsbench_dagster.core.release.policy import Policy
    from newsbench_dagster.core.tasks.intents import ALL_INTENTS
    from newsbench_dagster.core.tasks.produce import DAILY, todays_tasks
    from newsbench_dagster.core.web.network import Fetcher

    registry = allowlist(site, intent)
    frozen = instant(at)
    day = day_of(frozen)
    keys = site or registry.keys
    with (
        running_newsroom(port, frozen) as world,
        Fetcher(world.routing, registry.allowed_origins) as fetcher,
    ):
        made = todays_tasks(
            registry, fetcher, day, keys, tuple(intent) or ALL_INTENTS, reserve=True
        )
    pool = distinct_questions(made)
    daily = Counter(t["site"] for t in pool if t["suite"] == DAILY)
    total = Counter(t["site"] for t in pool)
    policy = Policy()
    budget = policy.max_looks * policy.heldout_n
    report = {
        "day": day.isoformat(),
        "sites": {
            k: {"daily": daily[k], "reserve": total[k] - daily[k], "pool": total[k]} for k in keys
        },
        "by_intent": dict(sorted(Counter(t["intent"] for t in pool).items())),
        "pool": len(pool),
        "gate_budget": {"looks": policy.max_looks, "heldout_n": policy.heldout_n, "tasks": budget},
        "looks_covered": min(policy.max_looks, len(pool) // max(1, policy.heldout_n)),
    }
    if as_json:
        sys.stdout.write(json.dumps(report, ensure_ascii=False) + "\n")
        return
    table = Table("site", "daily", "reserve", "pool", title=f"Task pool, {day.isoformat()}")
    for key, c in report["sites"].items():
        table.add_row(key, str(c["daily"]), str(c["reserve"]), str(c["pool"]))
    table.add_row(
        "all", str(sum(daily.values())), str(len(pool) - sum(daily.values())), str(len(pool))
    )
    console.print(table)
    intents = ", ".join(f"{k} {n}" for k, n in report["by_intent"].items())
    console.print(f"by intent: {intents or '-'}", highlight=False, soft_wrap=True)
    fits = "fits" if len(pool) >= budget else f"runs dry after look {report['looks_covered']}"
    console.print(
        f"gate budget at defaults: {policy.max_looks} looks x {policy.heldout_n} held-out "
        f"= {budget} tasks; pool {len(pool)}: {fits}",
        highlight=False,
    )


@app.command("scaffold")
def tasks_scaffold(
    name: Annotated[str, typer.Argument(help="File name in suites/regression/ (no extension).")],
    from_run: Annotated[str, typer.Option("--from-run", help="The run's id (r-...).")],
    artifacts: Annotated[Path, typer.Option(help="Artifact folder.")] = ARTIFACTS_DIR,
    reason: Annotated[str | None, typer.Option(help="Why this case is kept.")] = None,
    root: SuitesRoot = SUITES_DIR,
    sites: SitesFile = None,
) -> None:
    """Turn a recorded run into a reduced regression task: suites/regression/NAME.yaml.

    The task is the run's (intent, entry URL, inputs, constraints); `source` records the run
    id, agent version, failure class, error and date. Never overwrites a file.
    """
    from newsbench_dagster.core.tasks.suites import (
        NAME_RE,
        find_run,
        load_suites,
        regression_from_run,
        write_task_file,
    )

    if not NAME_RE.match(name):
        fail(f"name {name!r}: use lower-case letters, digits, - and _ (no extension)", 2)
    target = root / "regression" / f"{name}.yaml"
    if target.exists():
        fail(f"{shown(target)} exists; choose another name or edit it")
    run_json = find_run(artifacts, from_run)
    if run_json is None:
        fail(f"run {from_run} not found: no {artifacts}/runs/*/*/{from_run}/run.json")
    try:
        row = json.loads(run_json.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        fail(f"{run_json}: unreadable run.json: {e}")
    registry = load_registry(sites)
    if row.get("site") not in registry.keys:
        fail(f"{run_json}: site {row.get('site')!r} is not in the allowlist")
    if not row.get("intent") or not row.get("entry_url"):
        fail(f"{run_json}: the run has no intent or entry URL (an invalid task?)")
    write_task_file(target, regression_from_run(row, registry, reason))
    written = shown(target)
    console.print(f"wrote {written} from {shown(run_json)}", highlight=False)
    mine = [
        p
        for p in load_suites(shown(root), registry.allowed_origins, registry.keys).problems
        if Path(p.file) == written
    ]
    for p in mine:
        typer.echo(str(p))
    if mine:
        err.print(f"[yellow]edit {written}[/]: it does not validate yet", highlight=False)
        raise typer.Exit(1)
