"""`newsbench`: the main job, the newsroom, feed and page debugging, agents, recordings and
replay, curated suites and the release gate, from the shell. One module per command group;
each calls `core` and the same policy objects Dagster uses.

The entry point is `main`: it imports only the module of the command it is asked for, so
`newsbench inspect FILE` does not pay for the release gate's imports (`app`, every command at
once, is what `newsbench --help` and the tests use).
"""

import importlib
import sys
import warnings
from typing import Any

import typer

# google-api-core (via the BigQuery resource) warns about Python 3.11's end of life on import:
# a date in 2027, nothing to act on in a run.
warnings.filterwarnings(
    "ignore",
    message="You are using a Python version",
    category=FutureWarning,
    module=r"google\.api_core\._python_version_support$",
)

# command -> (module under newsbench_dagster.cli, attribute, a group of commands or one)
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "newsroom": ("newsroom", "app", True),
    "feeds": ("inspecting", "feeds_app", True),
    "agents": ("agents", "app", True),
    "tasks": ("tasks", "app", True),
    "recording": ("recording", "app", True),
    "replay": ("replay", "app", True),
    "inspect": ("inspecting", "inspect_page", False),
    "demo": ("pipeline", "demo", False),
    "backfill": ("pipeline", "backfill", False),
    "kpis": ("pipeline", "kpis", False),
    "record": ("recording", "record", False),
    "gate": ("gate", "gate", False),
    "report": ("report", "report", False),
}


def build(names: list[str] | None = None) -> typer.Typer:
    """The CLI with the given commands (all of them by default)."""
    cli = typer.Typer(
        help="Newsbench: continuous evaluation of browser agents on news sites.",
        no_args_is_help=True,
        add_completion=False,
    )

    @cli.callback()
    def _root() -> None:
        # A callback keeps `newsbench CMD` a group even when only CMD is registered.
        pass

    for name in names or list(COMMANDS):
        module, attribute, group = COMMANDS[name]
        obj = getattr(importlib.import_module(f"newsbench_dagster.cli.{module}"), attribute)
        if group:
            cli.add_typer(obj, name=name)
        else:
            cli.command(name)(obj)
    return cli


def main() -> Any:
    asked = sys.argv[1] if len(sys.argv) > 1 else None
    return build([asked] if asked in COMMANDS else None)()


def __getattr__(name: str) -> Any:
    if name == "app":
        return build()
    raise AttributeError(name)
