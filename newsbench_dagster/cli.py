"""`newsbench`: the main job, the newsroom, feed debugging and backfills from the shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from newsbench_dagster.newsroom.world import DEFAULT_SEED
from newsbench_dagster.paths import AGENTS_DIR, DAGSTER_HOME, DATA_DIR, PROJECT_ROOT, WAREHOUSE_FILE

if TYPE_CHECKING:
    from newsbench_dagster.core.reading.page import PageRecord, Timestamp

app = typer.Typer(
    help="Newsbench: continuous evaluation of browser agents on news sites.",
    no_args_is_help=True,
    add_completion=False,
)
newsroom_app = typer.Typer(help="The embedded simulated news web.", no_args_is_help=True)
feeds_app = typer.Typer(
    help="Debug what the producer reads from a feed or sitemap.", no_args_is_help=True
)
agents_app = typer.Typer(
    help="Agent manifests in agents/: list them, try one on today's tasks.", no_args_is_help=True
)
app.add_typer(newsroom_app, name="newsroom")
app.add_typer(feeds_app, name="feeds")
tasks_app = typer.Typer(
    help="Curated task suites in suites/: validate, list, coverage, scaffold from a run.",
    no_args_is_help=True,
)
app.add_typer(agents_app, name="agents")
app.add_typer(tasks_app, name="tasks")

# google-api-core (via the BigQuery resource) warns about Python 3.11's end of life on import.
warnings.filterwarnings("ignore", message="You are using a Python version", category=FutureWarning)

# Tables stay readable when piped (rich would wrap them at 80 columns).
console = Console(width=None if sys.stdout.isatty() else 140)
# Errors are never hard-wrapped: a path or URL broken over two lines cannot be copied.
err = Console(stderr=True, soft_wrap=True)
DEFAULT_PORT = 8411


def _progress() -> Progress:
    """The one progress bar of every long command: what, how far, how long."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
    )


def _today() -> date:
    return datetime.now(UTC).date()


def _fail(message: str, code: int = 1) -> None:
    # One line however long (a path, a URL): rich would wrap it at 80 columns when piped.
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


# Where URLs are fetched from: the same choice for every command that reads one.
ProxyOption = Annotated[
    str | None,
    typer.Option(
        help="HTTP proxy for URLs; *.test URLs default to the newsroom on "
        f"127.0.0.1:{DEFAULT_PORT}."
    ),
]


# -- newsroom ------------------------------------------------------------------------------
def _instant(text: str | None, option: str = "--at") -> datetime | None:
    if text is None:
        return None
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        _fail(f"{option} {text!r} is not an ISO 8601 instant (e.g. 2026-11-30T15:00:00Z)", 2)
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _newsroom(seed: int):
    from newsbench_dagster.newsroom import Newsroom

    return Newsroom(seed=seed)


def _site_key(newsroom, site: str) -> str:
    keys = [spec.key for spec in newsroom.sites]
    if site not in keys:
        _fail(f"unknown site {site!r}; the newsroom has: {', '.join(keys)}", 2)
    return site


@newsroom_app.command("serve")
def newsroom_serve(
    port: Annotated[int, typer.Option(help="Loopback port (the proxy address).")] = DEFAULT_PORT,
    seed: Annotated[int, typer.Option(help="World seed (content depends on it).")] = DEFAULT_SEED,
    at: Annotated[str | None, typer.Option(help="Freeze the clock at this ISO instant.")] = None,
    truth: Annotated[
        bool, typer.Option(help="Serve /__newsroom/truth (tests and benchmarks only).")
    ] = False,
) -> None:
    """Serve the newsroom in the foreground until Ctrl-C.

    Control API on the same port (loopback only): /__newsroom/health, /__newsroom/events,
    POST /__newsroom/reset?scope=run:ID, and with --truth /__newsroom/truth?site=KEY&at=ISO.
    """
    from newsbench_dagster.newsroom import FixedClock, NewsroomServer

    instant = _instant(at)
    clock = FixedClock(instant) if instant else None
    newsroom = _newsroom(seed)
    server = NewsroomServer(newsroom, port=port, clock=clock, expose_truth=truth).start()
    console.print(f"newsroom (seed {seed}) on {server.address}; use it as an HTTP proxy:")
    for site in newsroom.sites:
        console.print(f"  {site.origin}/   ({site.name}, {site.language}, {site.template})")
    console.print(f"  e.g. curl -x {server.address} http://{newsroom.sites[0].host}/")
    try:
        import threading

        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


@newsroom_app.command("sites")
def newsroom_sites(
    seed: Annotated[int, typer.Option(help="World seed.")] = DEFAULT_SEED,
    at: Annotated[str | None, typer.Option(help="ISO instant (default: now).")] = None,
) -> None:
    """The newsroom's sites: family, language, region, redesigns and what each serves."""
    from rich.table import Table

    newsroom = _newsroom(seed)
    instant = _instant(at) or datetime.now(UTC)
    table = Table(title=f"Newsroom sites (seed {seed}) at {instant:%Y-%m-%d %H:%M} UTC")
    for column in ("site", "origin", "lang", "family", "version", "region", "redesigns", "traits"):
        table.add_column(column)
    for spec in newsroom.sites:
        world = newsroom.site(spec.key)
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
            str(world.version(instant)),
            spec.region,
            ", ".join(f"v{d.version} {d.on}" for d in spec.drifts),
            ", ".join(traits),
        )
    console.print(table)


@newsroom_app.command("truth")
def newsroom_truth(
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
    instant = _instant(at) or datetime.now(UTC)
    typer.echo(json.dumps(newsroom.truth(key, instant).as_dict(), indent=2, ensure_ascii=False))


@newsroom_app.command("generate")
def newsroom_generate(
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

    _site_key(_newsroom(world_seed), site)
    if page not in variation.PAGES:
        _fail(f"unknown page {page!r}; choose from: {', '.join(sorted(variation.PAGES))}", 2)
    argv = ["--seed", str(seed), "--site", site, "--page", page, "--world-seed", str(world_seed)]
    variation.main(argv + (["--describe"] if describe else []))


# -- feeds ---------------------------------------------------------------------------------
def _read_source(source: str, proxy: str | None) -> tuple[bytes, str, str | None]:
    """Bytes of a file or an http(s) URL, the URL they came from, and the charset an HTTP
    response declared. *.test URLs go through the newsroom unless a proxy is given."""
    from urllib.parse import urlsplit

    import httpx

    if source.startswith(("http://", "https://")):
        host = urlsplit(source).hostname or ""
        if proxy is None and host.endswith(".test"):
            proxy = f"http://127.0.0.1:{DEFAULT_PORT}"
        try:
            resp = httpx.get(source, proxy=proxy, timeout=15, follow_redirects=True)
        except httpx.HTTPError as e:
            _fail(f"{source}: could not fetch: {type(e).__name__}: {e}")
        if resp.status_code >= 400:
            _fail(f"{source}: HTTP {resp.status_code}")
        return resp.content, str(resp.url), resp.charset_encoding
    path = Path(source)
    if not path.is_file():
        _fail(f"{source}: no such file")
    return path.read_bytes(), path.resolve().as_uri(), None


@feeds_app.command("inspect")
def feeds_inspect(
    source: Annotated[str, typer.Argument(help="A file path or an http(s) URL.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    kind: Annotated[
        str | None,
        typer.Option(help="rss, atom, jsonfeed, sitemap or homepage; default: sniff"),
    ] = None,
    proxy: ProxyOption = None,
) -> None:
    """Print the items the producer reads from a feed or sitemap.

    Each item: title, url, published, language. Exit status: 0 clean; 1 unreadable; 2
    malformed, with the items that could be salvaged printed (the producer keeps them too).
    Problems go to stderr, naming the source.
    """
    from newsbench_dagster.core.web.feeds import parse_document

    content, base, charset = _read_source(source, proxy)
    # The charset an HTTP response declared is the feed's own claim: the parser weighs it.
    headers = {"content-type": f"text/xml; charset={charset}"} if charset else None
    parsed = parse_document(content, base, kind, headers)
    if parsed.error:
        _fail(f"{source}: {parsed.error}")
    if as_json:
        for item in parsed.items:
            sys.stdout.write(json.dumps(item.as_json(), ensure_ascii=False) + "\n")
    else:
        _items_table(source, parsed)
    if parsed.warning:
        err.print(f"[yellow]warning:[/] {source}: {parsed.warning}", highlight=False)
        raise typer.Exit(2)


def _items_table(source: str, parsed) -> None:
    table = Table(title=f"{source} ({parsed.kind}, {len(parsed.items)} items)")
    for col in ("published", "language", "title", "url"):
        table.add_column(col, overflow="fold")
    for item in parsed.items:
        j = item.as_json()
        table.add_row(j["published"] or "", j["language"] or "", j["title"] or "", j["url"] or "")
    console.print(table)


# -- pages ---------------------------------------------------------------------------------
@app.command("inspect")
def inspect_page(
    source: Annotated[str, typer.Argument(help="A saved page (file path) or an http(s) URL.")],
    url: Annotated[
        str | None,
        typer.Option("--url", help="The page's original URL (resolves relative links)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    proxy: ProxyOption = None,
) -> None:
    """Print what a news page says about itself: headline, authors, times, language, links.

    Each value names the signal it came from (JSON-LD, OpenGraph, microdata, the visible page).
    Saved bytes are read in the charset they declare. Exit status: 0 read (what is missing and
    any malformed metadata go to stderr); 1 unreadable; 2 not an HTML page.
    """
    from contextlib import suppress

    from newsbench_dagster.core.reading.page import sniff_non_html, understand

    content, base, charset = _read_source(source, proxy)
    if kind := sniff_non_html(content):
        _fail(f"{source}: not an HTML page ({kind})", 2)
    page: str | bytes = content
    if charset:  # an HTTP Content-Type charset outranks what the document says
        with suppress(LookupError):
            page = content.decode(charset, "replace")
    record = understand(page, url or (base if base.startswith("http") else None))
    if not record.is_html:
        _fail(f"{source}: not an HTML page ({'; '.join(record.errors)})", 2)
    if as_json:
        summary = {
            "headline": record.headline,
            "authors": list(record.authors),
            "published": record.published.iso() if record.published else None,
            "modified": record.modified.iso() if record.modified else None,
            "language": record.language,
            "canonical": record.canonical,
            "is_liveblog": record.is_liveblog,
            "sources": record.sources,
        }
        sys.stdout.write(json.dumps(summary, ensure_ascii=False) + "\n")
    else:
        _page_table(source, record)
    if record.missing:
        err.print(f"[yellow]missing:[/] {source}: {', '.join(record.missing)}", highlight=False)
    for problem in record.errors:
        err.print(f"[yellow]warning:[/] {source}: {problem}", highlight=False)


def _page_table(source: str, record: PageRecord) -> None:
    from rich.markup import escape

    table = Table(title=escape(f"{source} ({record.encoding or 'text'})"))
    for col in ("field", "value", "source"):
        table.add_column(col, overflow="fold")

    def when(stamp: Timestamp | None) -> str:
        return f"{stamp.iso()}  (page: {stamp.raw})" if stamp else ""

    rows = [
        ("headline", record.headline or ""),
        ("authors", ", ".join(record.authors)),
        ("published", when(record.published)),
        ("modified", when(record.modified)),
        ("language", record.language or ""),
        ("canonical", record.canonical or ""),
        ("amp", record.amp or ""),
        ("is_liveblog", "yes" if record.is_liveblog else "no"),
    ]
    if record.publisher_authors:
        rows.append(("publisher as author", ", ".join(record.publisher_authors)))
    if u := record.latest_update:
        rows.append(("latest update", f"{when(u.time)}  {u.text}"))
    rows += [("correction", f"{when(c.time)}  {c.text}") for c in record.corrections]
    sources = {**record.sources, "publisher as author": "jsonld", "correction": "page"}
    if u:
        sources["latest update"] = u.source
    # Page text and source names ("html[lang]") are not rich markup.
    for field, value in rows:
        table.add_row(field, escape(value), escape(sources.get(field, "")))
    console.print(table)


# -- the pipeline --------------------------------------------------------------------------
def _quiet_dagster_warnings() -> None:
    import warnings

    from dagster import BetaWarning, PreviewWarning

    # The APIs we rely on are marked beta/preview; say so once in the docs, not on every run.
    warnings.filterwarnings("ignore", category=BetaWarning)
    warnings.filterwarnings("ignore", category=PreviewWarning)


def _instance():
    os.environ.setdefault("DAGSTER_HOME", str(DAGSTER_HOME))
    Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    from dagster import DagsterInstance

    return DagsterInstance.get()


def _materialize(days: list[date], sites: list[str], port: int, *, with_kpis: bool = True) -> bool:
    """One Dagster run per site and day (recorded in the local instance, so the UI shows
    them), then the KPI rollup per day. Returns whether every run succeeded."""
    from dagster import MultiPartitionKey

    _quiet_dagster_warnings()
    from newsbench_dagster.definitions import defs

    instance = _instance()
    quiet = {
        "loggers": {"console": {"config": {"log_level": "WARNING"}}},
        "resources": {"newsroom": {"config": {"port": port}}},
    }
    site_job = defs.resolve_job_def("site_day_job")
    kpi_job = defs.resolve_job_def("kpi_job")
    ok = True
    with _progress() as bar:
        steps = bar.add_task("evaluating", total=len(days) * (len(sites) + int(with_kpis)))
        for day in days:
            for site in sites:
                bar.update(steps, description=f"{day} {site}: feed → tasks → runs → scores")
                key = MultiPartitionKey({"site": site, "day": day.isoformat()})
                result = site_job.execute_in_process(
                    partition_key=key, instance=instance, run_config=quiet, raise_on_error=False
                )
                if not result.success:
                    ok = False
                    err.print(
                        f"[red]run for {site} {day} failed[/] (run {result.run_id}); "
                        "see the Dagster UI for the step that failed"
                    )
                bar.advance(steps)
            if with_kpis:
                bar.update(steps, description=f"{day}: KPI rollup")
                result = kpi_job.execute_in_process(
                    partition_key=day.isoformat(),
                    instance=instance,
                    run_config=quiet,
                    raise_on_error=False,
                )
                ok = ok and result.success
                bar.advance(steps)
    return ok


def _print_kpis(day: date, database: Path = WAREHOUSE_FILE) -> None:
    import duckdb

    if not database.exists():
        _fail(f"{database}: no warehouse yet; run `newsbench demo` first")
    with duckdb.connect(str(database), read_only=True) as con:
        rows = con.execute(
            """SELECT site, agent_version, n_scored, successes, success_rate, success_ci_low,
                      success_ci_high, mean_reward, ttfc_p50, ttfc_p95, n_env_failures,
                      tasks_run, tasks_generated
               FROM newsbench.kpi_daily
               WHERE day = ? AND slice_kind = 'all' ORDER BY site = '*', site, agent_version""",
            [datetime(day.year, day.month, day.day)],
        ).fetchall()
    table = Table(title=f"Newsbench KPIs for {day}")
    for col in (
        "site",
        "agent",
        "scored",
        "success [95% CI]",
        "reward",
        "TTFC p50/p95 s",
        "env fail",
        "tasks",
    ):
        right = col not in ("site", "agent")
        table.add_column(col, justify="right" if right else "left", no_wrap=True)

    def f(v, fmt="{:.2f}"):
        return "-" if v is None else fmt.format(v)

    for site, agent, n, wins, rate, lo, hi, reward, p50, p95, envf, run, gen in rows:
        table.add_row(
            "all sites" if site == "*" else site,
            agent,
            str(n),
            f"{wins}/{n} = {f(rate)} [{f(lo)}, {f(hi)}]" if n else "-",
            f(reward, "{:.3f}"),
            f"{f(p50)} / {f(p95)}",
            str(envf),
            f"{run} / {gen}",
        )
    console.print(table)
    if not rows:
        err.print(f"no KPI rows for {day}")


@contextmanager
def _running_newsroom(port: int):
    """The newsroom for the duration of a command: reused if one runs, else started here."""
    from newsbench_dagster.newsroom.launcher import ensure_newsroom

    server, health = ensure_newsroom(port, DEFAULT_SEED)
    err.print(
        f"newsroom {'started' if server else 'already running'} on 127.0.0.1:{port} "
        f"(revision {health.get('revision')})"
    )
    try:
        yield
    finally:
        if server is not None:
            server.stop()


def _serve_ui() -> None:
    """Run `dagster dev` until Ctrl-C or SIGTERM, then stop it and everything it started."""
    import signal

    env = {**os.environ, "DAGSTER_HOME": str(DAGSTER_HOME)}
    # Its own process group, so shutting down reaches the webserver and daemon too.
    proc = subprocess.Popen(
        [sys.executable, "-m", "dagster", "dev", "-w", "workspace.yaml"],
        cwd=PROJECT_ROOT,
        env=env,
        start_new_session=True,
    )

    def on_term(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        proc.wait()
    except KeyboardInterrupt:
        err.print("stopping the Dagster UI")
        for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=grace)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
    finally:
        signal.signal(signal.SIGTERM, previous)


@app.command()
def demo(
    no_ui: Annotated[
        bool,
        typer.Option(
            "--no-ui", envvar="NEWSBENCH_NO_UI", help="Do not start the Dagster UI afterwards."
        ),
    ] = False,
    day: Annotated[str | None, typer.Option(help="Day to evaluate (default: today, UTC).")] = None,
    port: Annotated[int, typer.Option(help="Newsroom port.")] = DEFAULT_PORT,
) -> None:
    """Evaluate every site for a day, print the KPI table, open the Dagster UI.

    Starts the newsroom, runs one Dagster run per site (feed -> tasks -> runs -> scores) and
    the day's KPI rollup, prints the KPI table, then serves the UI unless --no-ui.
    """
    from newsbench_dagster.partitions import SITE_KEYS

    the_day = date.fromisoformat(day) if day else _today()
    started = datetime.now()
    with _running_newsroom(port):
        ok = _materialize([the_day], SITE_KEYS, port)
        _print_kpis(the_day)
        err.print(f"done in {(datetime.now() - started).total_seconds():.1f}s")
        if not ok:
            raise typer.Exit(1)
        if not no_ui:
            err.print("starting the Dagster UI on http://127.0.0.1:3000 (Ctrl-C to stop)")
            _serve_ui()


@app.command()
def backfill(
    site: Annotated[list[str], typer.Option(help="Site key (repeatable).")],
    start: Annotated[str, typer.Option(help="First day, YYYY-MM-DD.")],
    end: Annotated[str, typer.Option(help="Last day, YYYY-MM-DD (inclusive).")],
    port: Annotated[int, typer.Option(help="Newsroom port.")] = DEFAULT_PORT,
) -> None:
    """Evaluate sites over a range of days (one Dagster run per site and day).

    Then each day's KPIs. Live sites can only be read as they are now: a past day is
    re-evaluated against the current pages and recorded under that day.
    """
    from newsbench_dagster.partitions import SITE_KEYS

    unknown = [s for s in site if s not in SITE_KEYS]
    if unknown:
        _fail(f"unknown site(s): {', '.join(unknown)} (allowlist: {', '.join(SITE_KEYS)})")
    first, last = date.fromisoformat(start), date.fromisoformat(end)
    if last < first:
        _fail(f"--end {end} is before --start {start}")
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    with _running_newsroom(port):
        ok = _materialize(days, site, port)
    for d in days:
        _print_kpis(d)
    if not ok:
        raise typer.Exit(1)


# -- agents -------------------------------------------------------------------------------
@agents_app.command("list")
def agents_list(
    directory: Annotated[Path, typer.Option(help="Manifest directory.")] = AGENTS_DIR,
) -> None:
    """Every agent manifest: its version (name@version+content hash), adapter, channel."""
    from newsbench_dagster.core.agents.protocol import load_manifests
    from newsbench_dagster.core.errors import ConfigError

    try:
        manifests = load_manifests(directory)
    except ConfigError as e:
        _fail(str(e))
    table = Table("agent version", "adapter", "channel", "model", "prompt hash", "description")
    for m in manifests:
        table.add_row(
            m.agent_version,
            m.adapter,
            m.channel,
            m.model or "",
            m.prompt_hash or "",
            m.description or "",
        )
    console.print(table)


def _allowlist(sites: list[str], intents: list[str]):
    """The allowlist, with the sites and intents a command was given checked against it
    (exit 2 naming the unknown ones)."""
    from newsbench_dagster.core.tasks.produce import ALL_INTENTS
    from newsbench_dagster.core.web.sites import load_sites
    from newsbench_dagster.paths import SITES_FILE

    if bad := [i for i in intents if i not in ALL_INTENTS]:
        _fail(f"unknown intent(s) {', '.join(bad)}; known: {', '.join(ALL_INTENTS)}", 2)
    registry = load_sites(SITES_FILE)
    keys = [s.key for s in registry.sites]
    if bad := [s for s in sites if s not in keys]:
        _fail(f"unknown site(s) {', '.join(bad)}; the allowlist has: {', '.join(keys)}", 2)
    return registry


def _run_scored(runner, todo: list[dict], day: date, label: str, trials: int):
    """Run the tasks with a progress bar, scoring each run as it ends."""
    import asyncio

    from newsbench_dagster.core.scoring.score import score_safely

    by_id = {t.get("id"): t for t in todo}
    scores: dict[str, dict] = {}
    with _progress() as bar:
        job = bar.add_task(label, total=len(todo) * trials)

        def progress(row: dict) -> None:
            scores[row["run_id"]] = score_safely(row, by_id.get(row["task_id"]))
            bar.advance(job)

        rows = asyncio.run(runner.run(todo, day, progress))
    return rows, scores


@agents_app.command("try")
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
    artifacts: Annotated[Path, typer.Option(help="Artifact folder.")] = DATA_DIR / "artifacts",
    port: Annotated[int, typer.Option(help="Newsroom port.")] = DEFAULT_PORT,
) -> None:
    """Run one agent on today's tasks of the embedded newsroom and print how each run was
    scored, without Dagster or the warehouse: the quickest way to see an agent through the
    harness (failure classes, answers, artifacts)."""

    from newsbench_dagster.core.agents.protocol import build_agent, load_manifest
    from newsbench_dagster.core.artifacts import LocalArtifactStore
    from newsbench_dagster.core.errors import ConfigError
    from newsbench_dagster.core.harness.browser import BrowserOptions
    from newsbench_dagster.core.harness.runner import Runner, RunSettings
    from newsbench_dagster.core.tasks.produce import ALL_INTENTS, todays_tasks
    from newsbench_dagster.core.web.network import Fetcher, RobotsRules
    from newsbench_dagster.resources.newsroom import NewsroomResource

    try:
        agent = build_agent(load_manifest(manifest))
    except ConfigError as e:
        _fail(str(e))
    registry = _allowlist(site, intent)
    keys = [s.key for s in registry.sites]
    day = _today()
    with _running_newsroom(port):
        routing = NewsroomResource(port=port).routing(registry.allowed_origins)
        todo: list[dict] = []
        with Fetcher(routing, registry.allowed_origins) as fetcher:
            robots = RobotsRules.fetch(fetcher, registry.allowed_origins)
            for key in site or keys:
                made = todays_tasks(registry, fetcher, day, [key], tuple(intent) or ALL_INTENTS)
                todo += made[:tasks]
        if not todo:
            _fail("no tasks: the feeds gave nothing for these sites and intents")
        from newsbench_dagster.core.tasks.sampling import pick, stratified_sample

        if sample is not None:
            drawn = stratified_sample(todo, sample, seed)
            todo, task_set = pick(todo, drawn), {"kind": "sample", **drawn.as_dict()}
        else:
            task_set = {"kind": "full", "n": len(todo), "task_ids": sorted(t["id"] for t in todo)}
        runner = Runner(
            [agent],
            options=BrowserOptions(routing=routing),
            robots=robots,
            store=LocalArtifactStore(artifacts),
            settings=RunSettings(trials=trials, concurrency=concurrency, task_set=task_set),
            world={"kind": "newsroom", "port": port},
        )
        rows, scores = _run_scored(runner, todo, day, agent.manifest.agent_version, trials)
    table = Table("site", "intent", "result", "class", "answer s", "steps", "artifacts")
    for row in rows:
        score = scores[row["run_id"]]
        result = "excluded" if score["excluded"] else ("pass" if score["success"] else "fail")
        run_json = row["artifacts"].get("run", "")
        table.add_row(
            row["site"],
            row["intent"],
            result,
            score["failure_class"] or "",
            f"{row['answer_seconds']:.1f}" if row["answer_seconds"] is not None else "",
            str(row["steps"]),
            run_json.rsplit("/", 1)[0].removeprefix("file://"),
        )
    console.print(table)
    scored = [s for s in scores.values() if not s["excluded"]]
    err.print(
        f"{sum(bool(s['success']) for s in scored)}/{len(scored)} scored runs passed; "
        f"{len(scores) - len(scored)} excluded (environment)"
    )


@app.command()
def kpis(
    day: Annotated[str | None, typer.Option(help="Day (default: today, UTC).")] = None,
) -> None:
    """Print the KPI table of a day from the warehouse."""
    _print_kpis(date.fromisoformat(day) if day else _today())


# -- recordings ------------------------------------------------------------------------------
recording_app = typer.Typer(
    help="Recordings (WARC 1.1): audit and index them.", no_args_is_help=True
)
app.add_typer(recording_app, name="recording")


def _read_tasks(path: Path) -> list[dict]:
    """Tasks from a file: a JSON list, one JSON object, or JSON lines."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        _fail(f"{path}: cannot read: {e}", 2)
    try:
        data = json.loads(text)
        return data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        pass
    tasks = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            tasks.append(json.loads(line))
        except json.JSONDecodeError as e:
            _fail(f"{path}:{n}: not JSON: {e.msg}", 2)
    return tasks


def _task_pages(tasks: list[dict]) -> list[str]:
    """The pages a task set needs recorded: entry pages and the harness's absolute probes."""
    pages: list[str] = []
    for t in tasks:
        pages.append(t["entry_url"])
        for probe in (t.get("oracle") or {}).get("probes") or []:
            if str(probe.get("url", "")).startswith(("http://", "https://")):
                pages.append(probe["url"])
    return list(dict.fromkeys(pages))


def _record_agent_runs(manifest: Path, todo: list[dict], routing, registry, pages, out) -> None:
    """Run the agent live on the tasks, recording what its runs load; merge that into the
    recording of the task pages (which wins) at `out`."""
    import asyncio
    import tempfile

    from newsbench_dagster.core.agents.protocol import build_agent, load_manifest
    from newsbench_dagster.core.artifacts import LocalArtifactStore
    from newsbench_dagster.core.errors import ConfigError
    from newsbench_dagster.core.harness.browser import BrowserOptions
    from newsbench_dagster.core.harness.runner import Runner, RunSettings
    from newsbench_dagster.core.replay.recorder import WarcRecorder, merge
    from newsbench_dagster.core.web.network import Fetcher, RobotsRules

    try:
        built = build_agent(load_manifest(manifest))
    except ConfigError as e:
        _fail(str(e), 2)
    runs_file = out.with_name(out.name + ".runs.tmp")
    recorder = WarcRecorder(runs_file, {"agent": built.manifest.agent_version})
    with Fetcher(routing, registry.allowed_origins) as fetcher:
        robots = RobotsRules.fetch(fetcher, registry.allowed_origins)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            runner = Runner(
                [built],
                options=BrowserOptions(routing=routing),
                robots=robots,
                store=LocalArtifactStore(tmp),
                settings=RunSettings(artifacts=(), record=recorder),
            )
            with _progress() as bar:
                job = bar.add_task(f"recording {built.manifest.agent_version}", total=len(todo))
                rows = asyncio.run(runner.run(todo, _today(), lambda _: bar.advance(job)))
    finally:
        recorder.close()
    answered = sum(r["run_status"] == "answered" for r in rows)
    err.print(f"{built.manifest.agent_version}: {answered}/{len(rows)} live runs answered")
    report = merge(pages, runs_file, out)
    err.print(
        f"merged: {report.kept} exchanges of the task pages, {report.added} added from the "
        f"agent's runs, {report.duplicates} duplicate(s) dropped",
        markup=False,
    )
    pages.unlink()
    runs_file.unlink()


@app.command()
def record(
    urls: Annotated[list[str], typer.Argument(help="Start URLs, loaded in order.")] = [],  # noqa: B006
    out: Annotated[Path, typer.Option(help="The WARC file to write (.warc.gz).")] = Path(
        "recording.warc.gz"
    ),
    site: Annotated[
        list[str], typer.Option(help="Record today's tasks of this site (repeatable).")
    ] = [],  # noqa: B006
    intent: Annotated[list[str], typer.Option(help="With --site: only this intent.")] = [],  # noqa: B006
    tasks: Annotated[int, typer.Option(help="With --site: at most this many tasks per site.")] = 4,
    tasks_from: Annotated[
        Path | None, typer.Option(help="Record the pages of these tasks (JSON or JSON lines).")
    ] = None,
    tasks_out: Annotated[
        Path | None,
        typer.Option(help="Write the recorded tasks here (JSON lines), replaying from --out."),
    ] = None,
    agent: Annotated[
        Path | None,
        typer.Option(help="Also run this agent live on the tasks and record all it loads."),
    ] = None,
    browse: Annotated[
        bool, typer.Option(help="Open a visible window and record until you close it.")
    ] = False,
    port: Annotated[int, typer.Option(help="Newsroom port (for *.test sites).")] = DEFAULT_PORT,
    settle_ms: Annotated[int, typer.Option(help="Wait after each load, ms.")] = 500,
) -> None:
    """Record pages into a WARC 1.1 file: every request Chromium makes and its response, each
    site's robots.txt and 404 page, a page timeline and the recording clock. Cookies,
    authorization headers and credentials are stripped before writing; the recording is
    then audited, and the command fails (exit 1) when a secret or a bot-check page remains.

    Pages come from URLs, from today's tasks of --site, or from a task file (--tasks-from);
    with --tasks-out the tasks are written back naming the recording, ready for
    `newsbench replay run`. With --agent, the agent also runs the tasks live and every page
    and call its runs make is recorded (merged in, the task pages winning), so the replay
    holds what the agent needs. --browse opens a window and records what you browse."""
    import asyncio

    from newsbench_dagster.core.harness.browser import BrowserOptions
    from newsbench_dagster.core.replay.recorder import audit
    from newsbench_dagster.core.replay.recorder import record as record_pages
    from newsbench_dagster.resources.newsroom import NewsroomResource

    registry = _allowlist(site, intent)
    todo: list[dict] = _read_tasks(tasks_from) if tasks_from else []
    with _running_newsroom(port):
        routing = NewsroomResource(port=port).routing(registry.allowed_origins)
        if site:
            from newsbench_dagster.core.tasks.produce import ALL_INTENTS, todays_tasks
            from newsbench_dagster.core.web.network import Fetcher

            with Fetcher(routing, registry.allowed_origins) as fetcher:
                for key in site:
                    made = todays_tasks(
                        registry, fetcher, _today(), [key], tuple(intent) or ALL_INTENTS
                    )
                    todo += made[:tasks]
        try:
            pages = list(dict.fromkeys([*urls, *_task_pages(todo)]))
        except (KeyError, TypeError) as e:
            _fail(f"{tasks_from}: a task without entry_url ({e})", 2)
        if not pages and not browse:
            _fail("nothing to record: give URLs, --site, --tasks-from or --browse", 2)
        options = BrowserOptions(routing=routing, headless=not browse)
        pages_file = out.with_name(out.name + ".pages.tmp") if agent else out
        summary = asyncio.run(
            record_pages(pages, pages_file, options, settle_ms=settle_ms, until_closed=browse)
        )
        if agent:
            if not todo:
                _fail("--agent needs tasks: give --site or --tasks-from", 2)
            _record_agent_runs(agent, todo, routing, registry, pages_file, out)
    err.print(
        f"{out}: {summary.exchanges} exchanges from {len(summary.pages)}/{len(pages)} pages; "
        f"stripped {summary.stripped_headers} secret headers, "
        f"redacted {summary.redacted_params} credential values",
        markup=False,
    )
    for failure in summary.failures:
        err.print(f"not recorded: {failure['url']}: {failure['error']}", markup=False)
    if tasks_out and todo:
        with open(tasks_out, "w", encoding="utf-8") as f:
            for t in todo:
                f.write(json.dumps({**t, "replay": {"recording": str(out.resolve())}}) + "\n")
        err.print(f"{tasks_out}: {len(todo)} task(s) replaying from {out}", markup=False)
    findings = audit(out)
    for finding in findings:
        err.print(f"audit: {finding}", markup=False)
    if findings or not (summary.pages or browse):
        raise typer.Exit(1)


@recording_app.command("audit")
def recording_audit(path: Annotated[Path, typer.Argument(help="A WARC file.")]) -> None:
    """Fail (exit 1) when a recording still holds a cookie, an authorization header or a
    credential, or a page is a bot-check / CAPTCHA page; each finding names its record."""
    from newsbench_dagster.core.replay.recorder import audit

    try:
        findings = audit(path)
    except (OSError, ValueError) as e:
        _fail(f"{path}: unreadable as WARC: {e}", 2)
    for finding in findings:
        console.print(str(finding), markup=False, highlight=False)
    if findings:
        err.print(f"{path}: {len(findings)} finding(s); the recording fails the audit")
        raise typer.Exit(1)
    err.print(f"{path}: clean")


@recording_app.command("index")
def recording_index(path: Annotated[Path, typer.Argument(help="A WARC file.")]) -> None:
    """One JSON line per record: type, URL, date, status, offset and length in the file."""
    import json as _json

    from newsbench_dagster.core.replay.recorder import index

    try:
        entries = index(path)
    except (OSError, ValueError) as e:
        _fail(f"{path}: unreadable as WARC: {e}", 2)
    for entry in entries:
        print(_json.dumps(entry))


@recording_app.command("merge")
def recording_merge(
    first: Annotated[Path, typer.Argument(help="A recording session (WARC).")],
    second: Annotated[Path, typer.Argument(help="Another session of the same task.")],
    out: Annotated[Path, typer.Option(help="The merged WARC to write.")],
) -> None:
    """Merge two recording sessions of the same task: the earlier session (by recording
    clock) wins every request both hold; the later one adds what the earlier never asked
    for. Prints what was kept, added and overridden, and which overridden pages changed."""
    from newsbench_dagster.core.replay.recorder import audit, merge

    try:
        report = merge(first, second, out)
    except (OSError, ValueError) as e:
        _fail(f"cannot merge: {e}", 2)
    err.print(
        f"{out}: {report.kept} exchanges from {report.earlier} (earlier, wins), "
        f"{report.added} added from {report.later}, {report.duplicates} duplicate(s) "
        "dropped in favour of the earlier copy",
        markup=False,
        highlight=False,
    )
    for url in report.changed:
        err.print(f"changed between sessions (earlier kept): {url}", markup=False)
    findings = audit(out)
    for finding in findings:
        err.print(f"audit: {finding}", markup=False)
    if findings:
        raise typer.Exit(1)


replay_app = typer.Typer(help="Replay of recordings: matching rules.", no_args_is_help=True)
app.add_typer(replay_app, name="replay")


@replay_app.command("suggest-rules")
def replay_suggest_rules(
    path: Annotated[Path, typer.Argument(help="A WARC file (ours or another tool's).")],
    out: Annotated[
        Path | None, typer.Option(help="Write the rules here (default: stdout).")
    ] = None,
) -> None:
    """Infer replay rules from a recording, to review: parameters that changed between loads
    without changing the response, canonical-id patterns, beacon endpoints. The file says
    `source: inferred`; hand-written rules win over it."""
    import yaml

    from newsbench_dagster.core.replay.matching import exchanges_from_warc, suggest_rules

    try:
        rules = suggest_rules(exchanges_from_warc(path))
    except (OSError, ValueError) as e:
        _fail(f"{path}: unreadable as WARC: {e}", 2)
    text = "# Inferred by `newsbench replay suggest-rules`: review before use.\n" + yaml.safe_dump(
        rules, sort_keys=False, allow_unicode=True
    )
    if out:
        out.write_text(text, encoding="utf-8")
        err.print(f"{out}: rules for {len(rules['sites'])} site(s)")
    else:
        print(text, end="")


@replay_app.command("run")
def replay_run(
    tasks_file: Annotated[Path, typer.Argument(help="Tasks (JSON or JSON lines).")],
    agent: Annotated[Path, typer.Option(help="The agent's manifest.")] = AGENTS_DIR
    / "reference.yaml",
    recording: Annotated[
        Path | None, typer.Option(help="Replay every task from this WARC (else each task's own).")
    ] = None,
    rules: Annotated[list[Path], typer.Option(help="Extra replay rules files.")] = [],  # noqa: B006
    trials: Annotated[int, typer.Option(help="Runs of each task.")] = 1,
    concurrency: Annotated[int, typer.Option(help="Browser contexts in flight.")] = 2,
    artifacts: Annotated[Path, typer.Option(help="Artifact folder.")] = DATA_DIR / "artifacts",
) -> None:
    """Run an agent on tasks replayed from recordings, offline: every request is answered
    from the WARC (tagged exact, fuzzy, search, blocked or miss in each run's replay.jsonl),
    nothing reaches the network. Prints how each run scored, then the coverage report: the
    pages and calls the recordings did not hold, the to-do list for the next recording. A
    run that failed on a page the recording lacks is excluded as `replay_gap`."""

    from newsbench_dagster.core.agents.protocol import build_agent, load_manifest
    from newsbench_dagster.core.artifacts import LocalArtifactStore
    from newsbench_dagster.core.errors import ConfigError
    from newsbench_dagster.core.harness.browser import BrowserOptions
    from newsbench_dagster.core.harness.runner import Runner, RunSettings
    from newsbench_dagster.core.replay.matching import coverage
    from newsbench_dagster.core.web.network import Routing

    try:
        built = build_agent(load_manifest(agent))
    except ConfigError as e:
        _fail(str(e), 2)
    todo = _read_tasks(tasks_file)
    for i, t in enumerate(todo):
        if not isinstance(t, dict):
            _fail(f"{tasks_file}: task {i} is not an object", 2)
        if recording is not None or rules:
            spec = dict(t.get("replay") or {})
            if recording is not None:
                spec["recording"] = str(recording.resolve())
            spec["rules"] = [*spec.get("rules", []), *(str(r.resolve()) for r in rules)]
            t["replay"] = spec
        if not t.get("replay"):
            _fail(f"{tasks_file}: task {t.get('id', i)} names no recording (use --recording)", 2)
    if not todo:
        _fail(f"{tasks_file}: no tasks", 2)
    runner = Runner(
        [built],
        options=BrowserOptions(routing=Routing.offline()),
        robots=None,
        store=LocalArtifactStore(artifacts),
        settings=RunSettings(trials=trials, concurrency=concurrency),
        world={"kind": "replay"},
    )
    label = f"{built.manifest.agent_version} (replay)"
    rows, scores = _run_scored(runner, todo, _today(), label, trials)
    table = Table("task", "intent", "result", "class", "exact", "fuzzy", "search", "miss")
    logs: dict[str, list[dict]] = {}
    for row in rows:
        score = scores[row["run_id"]]
        result = "excluded" if score["excluded"] else ("pass" if score["success"] else "fail")
        replay = row.get("replay") or {}
        counts = (replay.get("coverage") or {}).get("counts") or {}
        logs.setdefault(replay.get("recording") or "?", []).extend(replay.get("log") or [])
        table.add_row(
            row["task_id"],
            row["intent"] or "",
            result,
            score["failure_class"] or "",
            *(str(counts.get(k, 0)) for k in ("exact", "fuzzy", "search", "miss")),
        )
    console.print(table)
    for path, log in logs.items():
        cov = coverage(log)
        tags = ", ".join(f"{k} {v}" for k, v in sorted(cov["counts"].items()))
        console.print(f"coverage of {path}: {tags or 'no requests'}", markup=False)
        for url in cov["missing_pages"]:
            console.print(f"  missing page: {url}", markup=False)
        for url in cov["missing_calls"]:
            console.print(f"  missing call: {url}", markup=False)
    scored = [s for s in scores.values() if not s["excluded"]]
    err.print(
        f"{sum(bool(s['success']) for s in scored)}/{len(scored)} scored runs passed; "
        f"{len(scores) - len(scored)} excluded (environment, replay gaps included)"
    )


# -- gate ------------------------------------------------------------------------------------
GATE_EXIT = {"pass": 0, "block": 1, "insufficient_evidence": 3}


def _resolve_manifest(spec: str, directory: Path):
    """A manifest by path, agent version (name@version+hash), name@version or name."""
    from newsbench_dagster.core.agents.protocol import load_manifest, load_manifests
    from newsbench_dagster.core.errors import ConfigError

    try:
        if spec.endswith((".yaml", ".yml")) or Path(spec).is_file():
            return load_manifest(spec)
        found = [
            m
            for m in load_manifests(directory)
            if spec in (m.agent_version, m.name, f"{m.name}@{m.version}")
        ]
    except (ConfigError, OSError) as e:
        _fail(str(e), 2)
    if len(found) != 1:
        what = "no" if not found else f"{len(found)}"
        _fail(f"{what} manifest in {directory} matches {spec!r}", 2)
    return found[0]


@app.command()
def gate(
    candidate: Annotated[str, typer.Option(help="Candidate: manifest path, version or name.")],
    baseline: Annotated[
        str, typer.Option(help="Baseline: manifest path, version or name (the shipped one).")
    ] = "reference",
    site: Annotated[list[str], typer.Option(help="Site key (repeatable; default: all).")] = [],  # noqa: B006
    intent: Annotated[list[str], typer.Option(help="Intent (repeatable; default: all).")] = [],  # noqa: B006
    heldout: Annotated[int, typer.Option(help="Held-out tasks drawn from today's feeds.")] = 60,
    trials: Annotated[int, typer.Option(help="Runs of each task per agent.")] = 2,
    max_reruns: Annotated[int, typer.Option(help="Reruns of an environment failure.")] = 2,
    seed: Annotated[int, typer.Option(help="Seed of the held-out draw and the bootstrap.")] = 0,
    slice_min_tasks: Annotated[
        int, typer.Option(help="Tasks a slice (a site, an intent...) needs to be gated.")
    ] = 10,
    from_warehouse: Annotated[
        bool,
        typer.Option(
            "--from-warehouse",
            help="Do not run: print the latest decision the pipeline stored for the candidate.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the decision as JSON.")] = False,
    agents_dir: Annotated[Path, typer.Option("--agents", help="Manifest directory.")] = AGENTS_DIR,
    artifacts: Annotated[Path, typer.Option(help="Artifact folder.")] = DATA_DIR / "artifacts",
    port: Annotated[int, typer.Option(help="Newsroom port.")] = DEFAULT_PORT,
    database: Annotated[Path, typer.Option(help="Warehouse (with --from-warehouse).")] = (
        WAREHOUSE_FILE
    ),
) -> None:
    """Decide whether CANDIDATE may ship instead of BASELINE, and exit with the verdict: 0
    pass, 1 block, 3 insufficient evidence (2: bad input). Both run the same tasks (the
    regression suite, a held-out draw from today's feeds, the adversarial slice), interleaved,
    on the embedded newsroom; the decision record is printed (Markdown, or --json)."""
    import json as _json

    cand = _resolve_manifest(candidate, agents_dir)
    base = _resolve_manifest(baseline, agents_dir)
    if cand.agent_version == base.agent_version:
        _fail(f"candidate and baseline are the same version ({cand.agent_version})", 2)
    if from_warehouse:
        _gate_from_warehouse(database, cand.agent_version, base.agent_version, as_json)
        return
    from newsbench_dagster.core.agents.protocol import build_agent
    from newsbench_dagster.core.artifacts import LocalArtifactStore
    from newsbench_dagster.core.harness.browser import BrowserOptions
    from newsbench_dagster.core.harness.runner import Runner, RunSettings
    from newsbench_dagster.core.release.decide import (
        Policy,
        decide,
        evaluate,
        plan_task_set,
        render_markdown,
    )
    from newsbench_dagster.core.web.network import Fetcher, RobotsRules
    from newsbench_dagster.resources.newsroom import NewsroomResource

    registry = _allowlist(site, intent)
    day = _today()
    policy = Policy(
        trials=trials, max_reruns=max_reruns, seed=seed, slice_min_tasks=slice_min_tasks
    )
    with _running_newsroom(port):
        routing = NewsroomResource(port=port).routing(registry.allowed_origins)
        with Fetcher(routing, registry.allowed_origins) as fetcher:
            robots = RobotsRules.fetch(fetcher, registry.allowed_origins)
            task_set = plan_task_set(
                registry,
                fetcher,
                suites_dir=SUITES_DIR,
                recent=[],
                day=day,
                sites=site or None,
                intents=intent or None,
                heldout_n=heldout,
                seed=seed,
                warn=err.print,
            )
        if not task_set.tasks:
            _fail("no tasks for these sites and intents", 2)
        intervals = {
            o: s.rate_limit.min_interval_seconds for s in registry.sites for o in s.allowed_origins
        }

        def runner_for(agents):
            return Runner(
                agents,
                options=BrowserOptions(routing=routing),
                robots=robots,
                store=LocalArtifactStore(artifacts),
                settings=RunSettings(
                    trials=trials,
                    interleave=True,
                    min_interval=intervals,
                    task_set=task_set.description,
                ),
                world={"kind": "newsroom", "port": port},
            )

        with _progress() as bar:
            job = bar.add_task(
                f"{cand.agent_version} vs {base.agent_version}",
                total=len(task_set.tasks) * 2 * trials,
            )
            ev = evaluate(
                build_agent(cand),
                build_agent(base),
                task_set,
                day,
                runner_for,
                max_reruns=max_reruns,
                progress=lambda _row: bar.advance(job),
            )
    decision = decide(
        ev.scores,
        ev.runs,
        gating=task_set.gating,
        candidate_version=cand.agent_version,
        baseline_version=base.agent_version,
        policy=policy,
    )
    if as_json:
        console.print_json(_json.dumps({**decision, "task_set": task_set.description}, default=str))
    else:
        console.print(
            render_markdown(decision, {"dataset revision": task_set.revision}),
            markup=False,  # the Markdown has [brackets] rich would take for markup
            highlight=False,
        )
    raise typer.Exit(GATE_EXIT[decision["verdict"]])


def _gate_from_warehouse(database: Path, candidate: str, baseline: str, as_json: bool) -> None:
    import json as _json

    import duckdb

    if not database.exists():
        _fail(f"{database}: no warehouse yet", 2)
    with duckdb.connect(str(database), read_only=True) as con:
        try:
            found = con.execute(
                """SELECT verdict, baseline_version, markdown, reasons, decided_at
                   FROM newsbench.release_decision WHERE candidate_version = ?
                   ORDER BY decided_at DESC LIMIT 1""",
                [candidate],
            ).fetchone()
        except duckdb.CatalogException:
            found = None
    if found is None:
        _fail(f"no decision stored for {candidate} in {database}", 2)
    verdict, stored_baseline, markdown, reasons, decided_at = found
    if stored_baseline != baseline:
        _fail(
            f"the stored decision for {candidate} compared it with {stored_baseline}, "
            f"not {baseline}",
            2,
        )
    if as_json:
        console.print_json(
            _json.dumps(
                {"verdict": verdict, "reasons": _json.loads(reasons), "decided_at": decided_at},
                default=str,
            )
        )
    else:
        console.print(markdown, markup=False, highlight=False)
    raise typer.Exit(GATE_EXIT[verdict])


# -- tasks (curated suites) ----------------------------------------------------------------
SUITES_DIR = PROJECT_ROOT / "suites"
SuitesRoot = Annotated[Path, typer.Option("--root", help="Suites directory.")]
SitesFile = Annotated[
    Path | None, typer.Option("--sites", help="The site allowlist (default: sites.yaml).")
]


def _registry(sites: Path | None):
    from newsbench_dagster.core.errors import ConfigError
    from newsbench_dagster.core.web.sites import load_sites
    from newsbench_dagster.paths import SITES_FILE

    try:
        return load_sites(sites or SITES_FILE)
    except ConfigError as e:
        _fail(str(e))


def _load_suites(root: Path, sites: Path | None):
    from newsbench_dagster.core.tasks.suites import load_suites

    registry = _registry(sites)
    return registry, load_suites(_shown(root), registry.allowed_origins, registry.keys)


def _shown(path: Path) -> Path:
    """Relative to the working directory when under it: problems name files people open."""
    try:
        return path.resolve().relative_to(Path.cwd())
    except ValueError:
        return path


@tasks_app.command("schema")
def tasks_schema() -> None:
    """Print the task JSON Schema (the shipped file, byte for byte)."""
    from importlib import resources

    text = resources.files("newsbench_dagster.core.tasks").joinpath("schemas/task.schema.json")
    sys.stdout.write(text.read_text(encoding="utf-8"))


@tasks_app.command("validate")
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


@tasks_app.command("list")
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
        _fail(f"unknown suite {suite!r}; choose from: {', '.join(SUITES)}", 2)
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


@tasks_app.command("sample")
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
        _fail(f"--n must be >= 0, got {n}", 2)
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


@tasks_app.command("coverage")
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


@tasks_app.command("scaffold")
def tasks_scaffold(
    name: Annotated[str, typer.Argument(help="File name in suites/regression/ (no extension).")],
    from_run: Annotated[str, typer.Option("--from-run", help="The run's id (r-...).")],
    artifacts: Annotated[Path, typer.Option(help="Artifact folder.")] = DATA_DIR / "artifacts",
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
        _fail(f"name {name!r}: use lower-case letters, digits, - and _ (no extension)", 2)
    target = root / "regression" / f"{name}.yaml"
    if target.exists():
        _fail(f"{_shown(target)} exists; choose another name or edit it")
    run_json = find_run(artifacts, from_run)
    if run_json is None:
        _fail(f"run {from_run} not found: no {artifacts}/runs/*/*/{from_run}/run.json")
    try:
        row = json.loads(run_json.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        _fail(f"{run_json}: unreadable run.json: {e}")
    registry = _registry(sites)
    if row.get("site") not in registry.keys:
        _fail(f"{run_json}: site {row.get('site')!r} is not in the allowlist")
    if not row.get("intent") or not row.get("entry_url"):
        _fail(f"{run_json}: the run has no intent or entry URL (an invalid task?)")
    write_task_file(target, regression_from_run(row, registry, reason))
    shown = _shown(target)
    console.print(f"wrote {shown} from {_shown(run_json)}", highlight=False)
    mine = [
        p
        for p in load_suites(_shown(root), registry.allowed_origins, registry.keys).problems
        if Path(p.file) == shown
    ]
    for p in mine:
        typer.echo(str(p))
    if mine:
        err.print(f"[yellow]edit {shown}[/]: it does not validate yet", highlight=False)
        raise typer.Exit(1)


if __name__ == "__main__":
    app()
