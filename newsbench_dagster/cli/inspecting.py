"""Looking at what the pipeline reads: `newsbench feeds inspect` (a feed or sitemap, as the
producer reads it) and `newsbench inspect` (what a news page says about itself, as the oracles
read it). Both take a saved file or a URL."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from newsbench_dagster.cli.common import DEFAULT_PORT, ProxyOption, console, err, fail

if TYPE_CHECKING:
    from newsbench_dagster.core.reading.page_record import PageRecord, Timestamp

feeds_app = typer.Typer(
    help="Debug what the producer reads from a feed or sitemap.", no_args_is_help=True
)


def read_source(source: str, proxy: str | None) -> tuple[bytes, str, str | None]:
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
            fail(f"{source}: could not fetch: {type(e).__name__}: {e}")
        if resp.status_code >= 400:
            fail(f"{source}: HTTP {resp.status_code}")
        return resp.content, str(resp.url), resp.charset_encoding
    path = Path(source)
    if not path.is_file():
        fail(f"{source}: no such file")
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

    content, base, charset = read_source(source, proxy)
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

    from newsbench_dagster.core.reading.page import understand
    from newsbench_dagster.core.reading.page_bytes import sniff_non_html

    content, base, charset = read_source(source, proxy)
    if kind := sniff_non_html(content):
        fail(f"{source}: not an HTML page ({kind})", 2)
    page: str | bytes = content
    if charset:  # an HTTP Content-Type charset outranks what the document says
        with suppress(LookupError):
            page = content.decode(charset, "replace")
    record = understand(page, url or (base if base.startswith("http") else None))
    if not record.is_html:
        fail(f"{source}: not an HTML page ({'; '.join(record.errors)})", 2)
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
