"""`newsbench`: the main job, the newsroom, feed and page debugging, agents, recordings and
replay, curated suites and the release gate, from the shell. One module per command group;
each calls `core` and the same policy objects Dagster uses (`newsbench_dagster.cli:app` is the
entry point)."""

import warnings

import typer

from newsbench_dagster.cli import (
    agents,
    gate,
    inspecting,
    newsroom,
    pipeline,
    recording,
    replay,
    tasks,
)

# google-api-core (via the BigQuery resource) warns about Python 3.11's end of life on import.
warnings.filterwarnings("ignore", message="You are using a Python version", category=FutureWarning)

app = typer.Typer(
    help="Newsbench: continuous evaluation of browser agents on news sites.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(newsroom.app, name="newsroom")
app.add_typer(inspecting.feeds_app, name="feeds")
app.add_typer(agents.app, name="agents")
app.add_typer(tasks.app, name="tasks")
app.add_typer(recording.app, name="recording")
app.add_typer(replay.app, name="replay")
app.command("inspect")(inspecting.inspect_page)
app.command()(pipeline.demo)
app.command()(pipeline.backfill)
app.command()(pipeline.kpis)
app.command()(recording.record)
app.command()(gate.gate)
