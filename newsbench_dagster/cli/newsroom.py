"""`newsbench newsroom ...`: serve the embedded simulated news web, list its sites, print what
a site shows at an instant, render one seeded layout variant of a form page."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.table import Table

from newsbench_dagster.cli.common import DEFAULT_PORT, console, fail, instant
from newsbench_dagster.newsroom.world import DEFAULT_SEED

app = typer.Typer(help="The embedded simulated news web.", no_args_is_help=True)
SeedOption = Annotated[int, typer.Option(help="World seed (content depends on it).")]


def _newsroom(seed: int):
    from newsbench_dagster.newsroom.world import Newsroom

    return Newsroom(seed=seed)


def _site_key(newsroom, site: str) -> str:
    keys = [spec.key for spec in newsroom.sites]
    if site not in keys:
        fail(f"unknown site {site!r}; the newsroom has: {', '.join(keys)}", 2)
    return site


@app.command("serve")
def serve(
    port: Annotated[int, typer.Option(help="Loopback port (the proxy address).")] = DEFAULT_PORT,
    seed: SeedOption = DEFAULT_SEED,
    at: Annotated[str | None, typer.Option(help="Freeze the clock at this ISO instant.")] = None,
    truth: Annotated[
        bool, typer.Option(help="Serve /__newsroom/truth (tests and benchmarks only).")
    ] = False,
) -> None:
    """Serve the newsroom in the foreground until Ctrl-C.

    Control API on the same port (loopback only): /__newsroom/health, /__newsroom/events,
    POST /__newsroom/reset?scope=run:ID, and with --truth /__newsroom/truth?site=KEY&at=ISO.
    """
    from newsbench_dagster.newsroom.clock import FixedClock
    from newsbench_dagster.newsroom.server import NewsroomServer

    frozen = instant(at)
    clock = FixedClock(frozen) if frozen else None
    newsroom = _newsroom(seed)
    server = NewsroomServer(newsroom, port=port, clock=clock, expose_truth=truth).start()
    console.print(f"newsroom (seed {seed}) on {server.address}; use it as an HTTP proxy:")
    for site in newsroom.sites:
        console.print(f"  {site.origin}/   ({site.name}, {site.language}, {site.template})")
    console.print(f"  e.g. curl -x {server.address} http://{newsroom.sites[0].host}/")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


@app.command("sites")
def sites(
    seed: Annotated[int, typer.Option(help="World seed.")] = DEFAULT_SEED,
    at: Annotated[str | None, typer.Option(help="ISO instant (default: now).")] = None,
) -> None:
    """The newsroom's sites: family, language, region, redesigns and what each serves."""
    newsroom = _newsroom(seed)
    when = instant(at) or datetime.now(UTC)
    table = Table(title=f"Newsroom sites (seed {seed}) at {when:%Y-%m-%d %H:%M} UTC")
    for column in ("site", "origin", "lang", "family", "version", "region", "redesigns", "traits"):
        table.add_column(column)
    for spec in newsroom.sites:
        traits = [
            t
            for t, on in (
                ("amp", spec.amp),
                ("adversarial", spec.adversarial),
                ("short links", spec.short_links),
            )
            if on
        ]
        if spec.paywall_share:
            traits.append(f"paywall {spec.paywall_share:.0%}")
        table.add_row(
            spec.key,
            spec.origin,
            spec.language,
            spec.template,
            str(newsroom.site(spec.key).version(when)),
            spec.region,
            ", ".join(f"v{d.version} {d.on}" for d in spec.drifts),
            ", ".join(traits),
        )
    console.print(table)


@app.command("truth")
def truth(
    site: Annotated[str, typer.Argument(help="Site key, e.g. harbor.")],
    at: Annotated[str | None, typer.Option(help="ISO instant (default: now).")] = None,
    seed: Annotated[int, typer.Option(help="World seed.")] = DEFAULT_SEED,
) -> None:
    """Print what a site shows at an instant, as JSON (ground truth for meta-evaluation).

    Lead, each feed article's true metadata and defects, live blog, corrections, redesigns
    and traps. Checkers and agents never read it.
    """
    newsroom = _newsroom(seed)
    key = _site_key(newsroom, site)
    when = instant(at) or datetime.now(UTC)
    typer.echo(json.dumps(newsroom.truth(key, when).as_dict(), indent=2, ensure_ascii=False))


@app.command("generate")
def generate(
    site: Annotated[str, typer.Argument(help="Site key, e.g. harbor.")],
    page: Annotated[str, typer.Argument(help="Form page: newsletter, notifications, ...")],
    seed: Annotated[int, typer.Option(help="Variant seed (the layout, not the content).")],
    describe: Annotated[
        bool, typer.Option(help="Print the chosen variation as JSON instead of the page.")
    ] = False,
    world_seed: Annotated[int, typer.Option(help="World seed.")] = DEFAULT_SEED,
) -> None:
    """Render one seeded layout variant of a form page.

    The seed varies label association, nesting, hydration delay, decoys, field order and ids;
    the fields, their meaning and the task's truth are the same for every seed.
    """
    from newsbench_dagster.newsroom import variation

    newsroom = _newsroom(world_seed)
    _site_key(newsroom, site)
    if page not in variation.PAGES:
        fail(f"unknown page {page!r}; choose from: {', '.join(sorted(variation.PAGES))}", 2)
    if describe:
        typer.echo(json.dumps(variation.describe(seed), indent=2))
    else:
        typer.echo(variation.generate(site, page, seed, newsroom), nl=False)
