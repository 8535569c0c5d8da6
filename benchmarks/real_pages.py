"""How well `newsbench inspect` reads real news pages, beside the field's own extractors,
judged fold by fold on sources its rules were not written for.

Scores headline, published date and authors on the development sets beside the project:
`../shared/devsets/pages/` (postlight/parser's and mozilla/readability's test fixtures, truth
from their tests: the folds inspect's rules were developed on) and `../shared/devsets/pages-b/`
(metascraper and graby: held out, no rule was written on them; twnews, since one rule was).
Each page's
`source_repo` is a fold. Three readers, in the same run, on the same bytes:

- inspect: `core.reading.inspect.inspect_bytes` (what `newsbench inspect FILE --json` prints);
- trafilatura: `trafilatura.extract_metadata` with its defaults (title, author, date);
- htmldate: `htmldate.find_date` with its defaults, and with `original_date=True`.

Matching (documented in the printed table's footer), the same for every reader:
- headline: equal after Unicode NFKC, case folding, quotes and dashes unified, whitespace
  collapsed and trailing punctuation dropped, with or without a decoration (the site's,
  author's or section's name) set off by a separator at the title's start or end: the
  sources keep document titles ("Headline | Site") or headlines, each its own way;
- published: the calendar dates (UTC) at most one day apart; on metascraper's pages the
  asserted date is that library's `date`, the page's latest date (JSON-LD dateModified
  first), so inspect answers with its modified date there, else its published one;
- authors: the same set of names under the same normalisation.
`--strict` scores titles and dates exactly as the sources keep them; each run prints the
other matching's all-pages figures too.

A page counts for a field only when its truth asserts a non-null value. The table gives, per
fold, for the held-out folds together and for all pages, each field's pages and each reader's
share right, and "any reader" (some reader right: what a vote could reach). A fold is *behind*
on a field when a library gets more of its pages right than inspect. Pages from the test data
of trafilatura, htmldate, fundus, newspaper4k and goose3 are reserved for an independent
evaluation and are not in these sets.

    .venv/bin/python benchmarks/real_pages.py [--devset DIR ...] [--limit N] [--misses FIELD]
        [--check] [--smoke] [--strict] [--cold]

The dev sets are looked for beside the project, or at $NEWSBENCH_DEVSET (directories
separated by `:`), or at each --devset.

`--misses headline` lists the pages inspect gets wrong for that field (fold, truth, answer,
source). `--cold` also times inspect's first call in a fresh process on every page (what
`newsbench inspect FILE` pays; about 6 minutes) and prints the slowest and how many took over
2 s (`--check` then also exits 1 when any did). `--check` exits 1 when any fold is behind a
library on any field. The last lines:
`inspect vs best library: headline +N.NNN, published +N.NNN, authors +N.NNN` (all pages) and
`real pages: headline H, published P, authors A, ambiguous X%, behind-a-library folds N of M`
(X: the dev set with the most fields inspect read as ambiguous; `--check` also exits 1 when
X is over 5 %). Where inspect reads a field as ambiguous (two readings each with a strong
source's support, neither clearly winning: `evidence.choose`), it is right when the truth is
either: a checker accepts any of them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import unicodedata
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

_BESIDE = Path(__file__).resolve().parents[1].parent / "shared" / "devsets"
DEVSETS = [_BESIDE / "pages", _BESIDE / "pages-b"]
# The folds (a truth row's source_repo) inspect's reading rules were developed on: the first
# dev set, and twnews since the rule for the dateline after a Chinese reporter's name
# ("記者陳嘉寧／桃園機場報導") was written on one of its pages. Any other fold is held out, and a
# rule is judged there.
DEVELOPED_ON = ("mozilla/readability", "postlight/parser", "virus-warnning/twnews")
FIELDS = ("headline", "published", "authors")
AMBIGUOUS_GOAL = 0.05  # at most this share of a dev set's fields read as ambiguous
_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-", "‐": "-"})


def norm(text: Any) -> str:
    t = unicodedata.normalize("NFKC", str(text or "")).translate(_QUOTES).casefold()
    return re.sub(r"\s+", " ", t).strip().rstrip(".:;,!").strip()


def to_day(value: Any) -> date | None:
    """The UTC calendar date of an ISO string (a date-only string is that date)."""
    if not value:
        return None
    text = str(value).strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            return date.fromisoformat(text)
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (dt.astimezone(UTC) if dt.tzinfo else dt).date()


# A title's decoration: the site's (or author's, section's) name set off at its start or end
# by a separator ("Headline | Site", "Opinion | Headline", "Headline - Author - Medium",
# "Headline [LWN.net]", "Headline _Section _Site"). The sources keep their titles either way
# (readability and metascraper the document title, postlight the headline), so a headline is
# right with or without it, for every reader alike; `--strict` scores exact titles.
_TITLE_SEP = re.compile(
    r"\s+(?:[|\-–—:·»/]+|::)\s*|\s*[|·»]\s+|\s*_\s*|\s+(?=[\[(（【])|(?<=[\])）】])\s*"
)


def title_cores(title: str) -> set[str]:
    """The title and what is left of it with a decoration taken off its start or end."""
    out = {norm(title)}
    for m in _TITLE_SEP.finditer(title):
        out |= {norm(title[: m.start()]), norm(title[m.end() :])}
    return {c for c in out if c}


# What a source's asserted date means. metascraper's `date` is the page's latest date: its
# rules try JSON-LD dateModified, then datePublished, then updated_time / modified_time meta
# (packages/metascraper-date/index.js), so a reader is asked for the same: inspect's modified
# date, else its published one; htmldate's default already finds the latest date.
LATEST_DATE = ("microlinkhq/metascraper",)


def site_names(row: dict) -> tuple[str, ...]:
    """The page's host's labels ("www.iab.com" -> "iab"): a headline that is only one of
    these is the site's name, no headline. (Not the truth's own site name: metascraper's
    snapshots hold some wrong ones, e.g. a headline.)"""
    host = urlsplit(row.get("url") or "").hostname or ""
    return tuple(
        x for x in host.split(".")[:-1] if x not in ("www", "co", "com", "org", "net") and x
    )


def _letters(text: str) -> str:
    return "".join(ch for ch in norm(text) if ch.isalnum())


def right(
    field: str, truth: Any, got: Any, strict: bool = False, site: tuple[str, ...] = ()
) -> bool:
    if field == "headline":
        if not got:
            return False
        if strict:
            return norm(truth) == norm(got)
        if norm(got) != norm(truth) and _letters(got) in {_letters(n) for n in site}:
            return False  # the decoration alone
        return norm(got) in title_cores(truth) or norm(truth) in title_cores(got)
    if field == "published":
        t, g = to_day(truth), to_day(got)
        return t is not None and g is not None and abs((t - g).days) <= 1
    names = {norm(a) for a in got or [] if norm(a)}
    return bool(names) and names == {norm(a) for a in truth}


def answers(got: dict[str, Any], field: str, fold: str, strict: bool = False) -> list[Any]:
    """A reader's answers for a field as the fold's truth means it (`LATEST_DATE`): one, or
    every reading inspect found the field ambiguous between (a checker accepts any of them)."""
    if field == "published" and fold in LATEST_DATE and not strict and got.get("modified"):
        return [got["modified"]]
    return list((got.get("ambiguous") or {}).get(field) or [got.get(field)])


def judge(row: dict, got: dict[str, Any], field: str, strict: bool = False) -> bool:
    """Whether a reader's answer to the row's field is right (any of its answers)."""
    truth, site = wanted(row)[field], site_names(row)
    return any(
        right(field, truth, a, strict, site) for a in answers(got, field, fold_of(row), strict)
    )


def load_truth(devset: Path) -> list[dict]:
    rows = [json.loads(line) for line in (devset / "truth.jsonl").read_text().splitlines()]
    return [r for r in rows if r.get("file")]


def wanted(row: dict) -> dict[str, Any]:
    """The fields this page's truth asserts with a value."""
    out = {}
    if row.get("title"):
        out["headline"] = row["title"]
    if row.get("date_published"):
        out["published"] = row["date_published"]
    if row.get("authors"):
        out["authors"] = row["authors"]
    return out


# -- the three readers --------------------------------------------------------------------------
def read_inspect(data: bytes, url: str | None) -> dict[str, Any]:
    from newsbench_dagster.core.reading.inspect import inspect_bytes

    s = inspect_bytes(data, url)
    return {
        "headline": s.get("headline"),
        "published": s.get("published"),
        "modified": s.get("modified"),
        "authors": s.get("authors"),
        "sources": s.get("sources", {}),
        "ambiguous": s.get("ambiguous", {}),
    }


def read_trafilatura(data: bytes, url: str | None) -> dict[str, Any]:
    import trafilatura

    tree = trafilatura.load_html(data)
    meta = trafilatura.extract_metadata(tree, default_url=url) if tree is not None else None
    if meta is None:
        return {}
    authors = [a.strip() for a in (meta.author or "").split(";") if a.strip()]
    return {"headline": meta.title, "published": meta.date, "authors": authors}


def read_htmldate(data: bytes, url: str | None) -> dict[str, Any]:
    import htmldate

    return {"published": htmldate.find_date(data, url=url)}


def read_htmldate_original(data: bytes, url: str | None) -> dict[str, Any]:
    import htmldate

    return {"published": htmldate.find_date(data, url=url, original_date=True)}


READERS: dict[str, Callable[[bytes, str | None], dict[str, Any]]] = {
    "inspect": read_inspect,
    "trafilatura": read_trafilatura,
    "htmldate": read_htmldate,
    "htmldate(original)": read_htmldate_original,
}


def reads(reader: str, field: str) -> bool:
    """Whether a reader reads that field at all (htmldate reads dates only)."""
    return not reader.startswith("htmldate") or field == "published"


def read_page(job: tuple[str, str | None, tuple[str, ...]]) -> dict[str, Any]:
    """Some readers on one page, with their time; a reader that raises is an error, not a
    miss."""
    warnings.filterwarnings("ignore")
    path, url, names = job
    data = Path(path).read_bytes()
    out: dict[str, Any] = {}
    for name in names:
        start = time.perf_counter()
        try:
            got, error = READERS[name](data, url), None
        except Exception as e:  # a library's crash on a page is a result worth counting
            got, error = {}, f"{type(e).__name__}: {e}"
        out[name] = {"got": got, "error": error, "seconds": time.perf_counter() - start}
    return out


def read_all(pages: list[tuple[str, str | None]], workers: int) -> list[dict[str, Any]]:
    """inspect in processes of its own, the plain libraries in others: inspect's use of them
    (htmldate's date parser held to the page's language) leaves no cache behind for them."""
    groups = [("inspect",), tuple(n for n in READERS if n != "inspect")]
    merged: list[dict[str, Any]] = [{} for _ in pages]
    for names in groups:
        with ProcessPoolExecutor(workers) as pool:
            jobs = [(path, url, names) for path, url in pages]
            for out, res in zip(merged, pool.map(read_page, jobs, chunksize=4), strict=True):
                out.update(res)
    return merged


COLD_LIMIT_S = 2.0  # inspect's first call in a process, on any page
_COLD = (
    "import sys, time, warnings; warnings.filterwarnings('ignore');"
    "from newsbench_dagster.core.reading.inspect import inspect_bytes;"
    "data = open(sys.argv[1], 'rb').read(); t = time.perf_counter();"
    "inspect_bytes(data, sys.argv[2] or None); print(time.perf_counter() - t)"
)


def inspect_cold(path: str, url: str | None) -> float:
    """Seconds of inspect's first call in a fresh process (imports not counted), as
    `newsbench inspect FILE` pays it."""
    done = subprocess.run(
        [sys.executable, "-c", _COLD, path, url or ""], capture_output=True, text=True, check=True
    )
    return float(done.stdout.strip())


def devsets_default() -> list[Path]:
    """$NEWSBENCH_DEVSET (one directory or several, separated by the path separator), else
    every set beside the project that is there."""
    if os.environ.get("NEWSBENCH_DEVSET"):
        return [Path(p) for p in os.environ["NEWSBENCH_DEVSET"].split(os.pathsep) if p]
    return [d for d in DEVSETS if (d / "truth.jsonl").is_file()] or [DEVSETS[0]]


def fold_of(row: dict) -> str:
    return row.get("source_repo") or "(unknown source)"


def score_cells(
    rows: list[dict], results: list[dict], strict: bool = False
) -> dict[tuple[str, str], dict[str, int]]:
    """(fold, field) -> {"pages": n, reader: right, ..., "any": pages some reader got right},
    with the totals under the folds "held out" and "all"."""
    cells: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for row, res in zip(rows, results, strict=True):
        fold = fold_of(row)
        groups = [fold, "all"] + ([] if fold in DEVELOPED_ON else ["held out"])
        for field in wanted(row):
            oks = {name: judge(row, r["got"], field, strict) for name, r in res.items()}
            for group in groups:
                cell = cells[(group, field)]
                cell["pages"] += 1
                cell["any"] += any(oks.values())
                for name, ok in oks.items():
                    cell[name] += ok
    return cells


def behind(cell: dict[str, int], field: str) -> bool:
    """Whether a library gets more of the cell's pages right than inspect does."""
    libraries = [cell[x] for x in READERS if x != "inspect" and reads(x, field)]
    return bool(libraries) and cell["inspect"] < max(libraries)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--devset",
        type=Path,
        action="append",
        help="a dev set directory (truth.jsonl, html/); repeat for several "
        "(default: every set beside the project)",
    )
    ap.add_argument("--limit", type=int, default=0, help="only the first N pages of each fold")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--misses", choices=FIELDS, help="list inspect's misses for a field")
    ap.add_argument("--check", action="store_true", help="exit 1 if any fold is behind a library")
    ap.add_argument("--smoke", action="store_true", help="the first 3 pages of each fold, 1 worker")
    ap.add_argument(
        "--cold",
        action="store_true",
        help="also time inspect's first call in a fresh process on every page (~6 min)",
    )
    ap.add_argument(
        "--strict",
        action="store_true",
        help="titles and dates exactly as each source keeps them (no decoration taken off a "
        "title; metascraper's latest date compared with published dates)",
    )
    args = ap.parse_args(argv)
    if args.smoke:
        args.limit, args.workers = args.limit or 3, 1
    devsets = args.devset or devsets_default()
    for devset in devsets:
        if not (devset / "truth.jsonl").is_file():
            print(f"no dev set at {devset} (truth.jsonl missing)", file=sys.stderr)
            return 2
    rows, seen = [], Counter()
    for devset in devsets:
        for row in load_truth(devset):
            seen[fold_of(row)] += 1
            if not args.limit or seen[fold_of(row)] <= args.limit:
                rows.append({**row, "path": str(devset / row["file"]), "set": devset.name})
    jobs = [(r["path"], r.get("url")) for r in rows]
    start = time.perf_counter()
    results = read_all(jobs, args.workers)
    wall = time.perf_counter() - start

    cells = score_cells(rows, results, args.strict)
    other = score_cells(rows, results, not args.strict)
    errors: Counter[str] = Counter()
    seconds: dict[str, list[float]] = defaultdict(list)
    by_source: dict[tuple[str, str], list[bool]] = defaultdict(list)
    misses = []
    shared: Counter[str] = Counter()  # fields scored, per dev set
    unsure: Counter[str] = Counter()  # ...that inspect read as ambiguous
    for row, res in zip(rows, results, strict=True):
        for name, r in res.items():
            seconds[name].append(r["seconds"])
            errors[name] += r["error"] is not None
        got = res["inspect"]["got"]
        for field, truth in wanted(row).items():
            ok = judge(row, got, field, args.strict)
            source = got.get("sources", {}).get(field, "(none)")
            by_source[(field, source)].append(ok)
            shared[row["set"]] += 1
            unsure[row["set"]] += bool((got.get("ambiguous") or {}).get(field))
            if not ok and field == args.misses:
                mine = answers(got, field, fold_of(row), args.strict)
                misses.append((row["id"], fold_of(row), truth, mine, source))

    names = list(READERS)
    sets = ", ".join(str(d) for d in devsets)
    print(f"{len(rows)} pages from {sets} in {wall:.1f} s ({args.workers} workers)\n")
    folds = sorted({fold_of(r) for r in rows}, key=lambda f: (f not in DEVELOPED_ON, f))
    print(
        "inspect's rules were developed on: "
        + ", ".join(f for f in DEVELOPED_ON)
        + "; every other fold is held out (no rule was written on it).\n"
    )
    print("| fold | field | pages | " + " | ".join(names) + " | any reader |")
    print("|---|---|---|" + "---|" * (len(names) + 1))
    lagging = []
    for fold in [*folds, "held out", "all"]:
        for field in FIELDS:
            cell = cells.get((fold, field))
            if not cell:
                continue
            n = cell["pages"]
            shares = [f"{cell[x] / n:.3f}" if reads(x, field) else "–" for x in names]
            mark = ""
            if fold in folds and behind(cell, field):
                lagging.append(f"{fold} {field}")
                mark = " ◂ behind"
            label = fold if fold in folds else f"**{fold}**"
            print(
                f"| {label} | {field} | {n} | "
                + " | ".join(shares)
                + f" | {cell['any'] / n:.3f} |{mark}"
            )
    print("\nerrors: " + ", ".join(f"{x} {errors[x]}" for x in names))
    over = 0
    if args.cold:
        cold = sorted(
            ((inspect_cold(r["path"], r.get("url")), r["id"]) for r in rows), reverse=True
        )
        over = sum(t > COLD_LIMIT_S for t, _ in cold)
        print(
            f"inspect cold (one fresh process per page, its first call): max {cold[0][0]:.2f} s "
            f"({cold[0][1]}), {over} of {len(cold)} pages over {COLD_LIMIT_S:.0f} s"
        )
    print(
        "seconds per page (median, max): "
        + ", ".join(f"{x} {sorted(s)[len(s) // 2]:.3f}/{max(s):.2f}" for x, s in seconds.items())
    )
    print("\ninspect by the source it chose (all folds):")
    for (field, source), oks in sorted(by_source.items()):
        print(f"  {field:9} {source:34} {sum(oks):4}/{len(oks):<4} {sum(oks) / len(oks):.3f}")
    if misses:
        print(f"\ninspect misses on {args.misses}:")
        for page, fold, truth, got, source in misses:
            print(f"  {page} [{fold}]: truth={truth!r} got={got!r} ({source})")
    print(
        "\nmatching: headline equal after NFKC, casefold, quotes/dashes unified, whitespace "
        "collapsed, trailing punctuation dropped"
        + (
            ""
            if args.strict
            else ", with or without a decoration set off by a separator at "
            'the title\'s start or end ("Headline | Site"), for every reader'
        )
        + "; published within 1 day (UTC dates)"
        + (
            ""
            if args.strict
            else f", on {', '.join(LATEST_DATE)} the page's latest date "
            "(that source's `date` is dateModified first): inspect's modified date, else "
            "published"
        )
        + "; authors the same set of names, normalised the same way. A fold is behind when a "
        "library gets more of its pages right than inspect on a field."
    )
    print(
        (
            "as the sources keep them (--strict)"
            if not args.strict
            else "with decorations and latest dates (default)"
        )
        + ", all pages: "
        + "; ".join(
            f"{f} "
            + ", ".join(
                f"{x} {other[('all', f)][x] / other[('all', f)]['pages']:.3f}"
                for x in names
                if reads(x, f)
            )
            for f in FIELDS
            if other.get(("all", f))
        )
    )
    if lagging:
        print("behind a library: " + "; ".join(lagging))
    lead = {}
    for field in FIELDS:
        cell = cells.get(("all", field)) or Counter()
        libraries = [cell[x] for x in names[1:] if reads(x, field)]
        lead[field] = (cell["inspect"] - max(libraries)) / cell["pages"] if cell["pages"] else 0.0
    print("inspect vs best library: " + ", ".join(f"{f} {lead[f]:+.3f}" for f in FIELDS))
    total = {f: (cells.get(("all", f)) or Counter()) for f in FIELDS}
    share = {name: unsure[name] / shared[name] for name in shared if shared[name]}
    print(
        "ambiguous (inspect read two supported values; either is accepted): "
        + ", ".join(f"{name} {share[name]:.1%} ({unsure[name]} of {shared[name]} fields)"
                    for name in share)
    )  # fmt: skip
    worst = max(share.values(), default=0.0)
    print(
        "real pages: "
        + ", ".join(
            f"{f} {total[f]['inspect'] / total[f]['pages']:.3f}" if total[f]["pages"] else f"{f} –"
            for f in FIELDS
        )
        + f", ambiguous {worst:.1%}"
        + f", behind-a-library folds {len({x.split(' ')[0] for x in lagging})} of {len(folds)}"
    )
    return 1 if args.check and (lagging or worst > AMBIGUOUS_GOAL or over) else 0


if __name__ == "__main__":
    raise SystemExit(main())
