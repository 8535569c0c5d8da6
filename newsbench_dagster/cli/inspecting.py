"""Looking at what the pipeline reads: `newsbench feeds inspect` (a feed or sitemap, as the
producer reads it) and `newsbench inspect` (what a news page says about itself, as the oracles
read it). Both take a saved file or a URL."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlsplit

import typer
from rich.table import Table

from newsbench_dagster.cli.common import (
    DEFAULT_PORT,
    AtOption,
    PortOption,
    ProxyOption,
    console,
    err,
    fail,
    instant,
    running_newsroom,
)

if TYPE_CHECKING:
    from newsbench_dagster.core.reading.page_record import PageRecord, Timestamp

feeds_app = typer.Typer(
    help="Debug what the producer reads from a feed or sitemap.", no_args_is_help=True
)


def _is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def _in_newsroom(source: str) -> bool:
    """A newsroom URL: its host is a *.test name, which only the newsroom serves."""
    return _is_url(source) and (urlsplit(source).hostname or "").endswith(".test")


@contextmanager
def fetching(sources: list[str], proxy: str | None, port: int, at: str | None) -> Iterator:
    """The proxy the sources' URLs are fetched through, for the command's duration: the
    given --proxy; else, when a source is a newsroom URL, the newsroom on `port` (the one
    running there, or one started here and stopped at the end, as `agents try` does; with
    --at frozen at that instant); else none."""
    frozen = instant(at)
    newsroom = any(_in_newsroom(s) for s in sources)
    if frozen is not None and not (newsroom and proxy is None):
        why = "with --proxy the pages come from elsewhere" if proxy else "no newsroom URL given"
        fail(f"--at freezes the embedded newsroom: {why}", 2)
    if not newsroom or proxy is not None:
        yield proxy
        return
    with running_newsroom(port, frozen):
        yield f"http://127.0.0.1:{port}"


def read_source(source: str, proxy: str | None) -> tuple[bytes, str, str | None]:
    """Bytes of a file or an http(s) URL (through `proxy` when given), the URL they came
    from, and the charset an HTTP response declared. A URL is read as the poller reads it
    (`network.bounded_get`): decoded as it arrives and refused past the size limit."""
    if _is_url(source):
        from newsbench_dagster.core.web.network import fetch_once

        res = fetch_once(source, proxy)
        if res.status is None:
            fail(f"{source}: could not fetch: {res.error}")
        if res.error:
            fail(f"{source}: {res.error}")
        if res.status >= 400:
            fail(f"{source}: HTTP {res.status}")
        return res.content, res.final_url or source, res.charset
    path = Path(source)
    if not path.is_file():
        fail(f"{source}: no such file")
    from newsbench_dagster.core.web.network import MAX_RESPONSE_BYTES

    if (size := path.stat().st_size) > MAX_RESPONSE_BYTES:  # as a fetched one would be
        fail(f"{source}: {size} bytes, over the {MAX_RESPONSE_BYTES} byte limit: not read")
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
    port: PortOption = DEFAULT_PORT,
    at: AtOption = None,
) -> None:
    """Print the items the producer reads from a feed or sitemap.

    Each item: title, url, published, language. Exit status: 0 clean; 1 unreadable; 2
    malformed, with the items that could be salvaged printed (the producer keeps them too).
    Problems go to stderr, naming the source. A newsroom URL (*.test) is fetched from the
    newsroom on --port, started for the command when none runs there (frozen with --at).
    """
    from newsbench_dagster.core.web.feeds import parse_document

    with fetching([source], proxy, port, at) as via:
        content, base, charset = read_source(source, via)
    # The charset an HTTP response declared is the feed's own claim: the parser weighs it.
    headers = {"content-type": f"text/xml; charset={charset}"} if charset else None
    parsed = parse_document(content, base, kind, headers)
    if parsed.error:
        fail(f"{source}: {parsed.error}")
    if as_json:
        for item in parsed.items:
            sys.stdout.write(json.dumps(item.as_json(), ensure_ascii=False) + "\n")
    else:
        table = Table(title=f"{source} ({parsed.kind}, {len(parsed.items)} items)")
        for col in ("published", "language", "title", "url"):
            table.add_column(col, overflow="fold")
        for item in parsed.items:
            j = item.as_json()
            row = (j["published"], j["language"], j["title"], j["url"])
            table.add_row(*(v or "" for v in row))
        console.print(table)
    if parsed.warning:
        err.print(f"[yellow]warning:[/] {source}: {parsed.warning}", highlight=False)
        raise typer.Exit(2)


PAGE_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml")


def _page_sources(sources: list[str]) -> list[str]:
    """Files, URLs and the saved pages under directories (sorted), in the order given."""
    out: list[str] = []
    for source in sources:
        path = Path(source)
        if not _is_url(source) and path.is_dir():
            found = sorted(
                str(p) for p in path.rglob("*") if p.suffix.lower() in PAGE_SUFFIXES and p.is_file()
            )
            if not found:
                fail(f"{source}: no saved pages ({', '.join(PAGE_SUFFIXES)}) under it")
            out += found
        else:
            out.append(source)
    return out


def inspect_page(
    sources: Annotated[
        list[str],
        typer.Argument(
            help="Saved pages (files or directories of them) or http(s) URLs.",
            metavar="PAGE...",
        ),
    ],
    url: Annotated[
        str | None,
        typer.Option("--url", help="The page's original URL (resolves relative links)."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per page, one per line.")
    ] = False,
    proxy: ProxyOption = None,
    port: PortOption = DEFAULT_PORT,
    at: AtOption = None,
) -> None:
    """Print what a news page says about itself: headline, authors, times, language, links.

    Each value names the signal it came from (JSON-LD, OpenGraph, microdata, the visible page,
    trafilatura, htmldate) and a confidence: the chosen value's share of the weight of every
    signal that named one. `conflicts` names the strong signals that said otherwise. Saved
    files are read from their bytes, without a browser; their charset is the one they declare
    unless the bytes contradict it.

    Several pages (or a directory) are read in one process: with --json, one object per line
    with its "file"; a page that cannot be read gets {"file", "error"} and the rest go on.
    Exit status: 0 all read (what is missing and any malformed metadata go to stderr); 1 a
    page unreadable; 2 a page that is not HTML (with several pages, the worst of them).

    Newsroom URLs (*.test) are fetched from the newsroom on --port, started for the command
    when none runs there (frozen at --at when given).
    """
    pages = _page_sources(sources)
    if len(pages) > 1 and url:
        fail("--url names one page's address: give it with a single page")
    with fetching(pages, proxy, port, at) as via:
        worst = _inspect_pages(pages, url, as_json, via)
    if worst:
        raise typer.Exit(worst)


def _inspect_pages(pages: list[str], url: str | None, as_json: bool, proxy: str | None) -> int:
    """Read and print each page; the worst exit status of those that could not be read."""
    from newsbench_dagster.core.reading.inspect import summary
    from newsbench_dagster.core.reading.page import understand
    from newsbench_dagster.core.reading.page_bytes import sniff_non_html

    many = len(pages) > 1
    worst = 0
    for source in pages:
        try:
            content, base, charset = read_source(source, proxy)
            if kind := sniff_non_html(content):
                raise _Unreadable(f"not an HTML page ({kind})", 2)
            record = understand(
                content, url or (base if base.startswith("http") else None), http_charset=charset
            )
            if not record.is_html:
                raise _Unreadable(f"not an HTML page ({'; '.join(record.errors)})", 2)
        except _Unreadable as e:
            if not many:
                fail(f"{source}: {e.message}", e.code)
            err.print(f"[bold red]error:[/] {source}: {e.message}", highlight=False)
            worst = max(worst, e.code)
            _error_line(as_json, source, e.message)
            continue
        except typer.Exit as e:  # read_source said why on stderr
            if not many:
                raise
            worst = max(worst, e.exit_code or 1)
            _error_line(as_json, source, "could not be read (the reason is on stderr)")
            continue
        if as_json:
            row = {"file": source, **summary(record)} if many else summary(record)
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
            sys.stdout.flush()
        else:
            _page_table(source, record)
        if record.missing:
            err.print(f"[yellow]missing:[/] {source}: {', '.join(record.missing)}", highlight=False)
        for problem in record.errors:
            err.print(f"[yellow]warning:[/] {source}: {problem}", highlight=False)
    return worst


def _error_line(as_json: bool, source: str, message: str) -> None:
    if as_json:
        sys.stdout.write(json.dumps({"file": source, "error": message}, ensure_ascii=False) + "\n")


class _Unreadable(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.message, self.code = message, code


def _page_table(source: str, record: PageRecord) -> None:
    from rich.markup import escape

    table = Table(title=escape(f"{source} ({record.encoding or 'text'})"))
    for col in ("field", "value", "source"):
        table.add_column(col, overflow="fold")

    def when(stamp: Timestamp | None) -> str:
        return f"{stamp.iso()}  (page: {stamp.raw})" if stamp else ""

    def conf(field: str) -> str:
        c = record.confidence.get(field)
        against = record.conflicts.get(field)
        note = f"  (confidence {c:.2f}" if c is not None else ""
        note += f"; against: {', '.join(against)})" if against else (")" if note else "")
        return note

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
        table.add_row(field, escape(value), escape(sources.get(field, "") + conf(field)))
    console.print(table)
