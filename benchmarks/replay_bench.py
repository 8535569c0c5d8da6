"""Replay: page-load time and match rate of our replay against the live newsroom, pywb and
Playwright's `route_from_har`, all replaying the same recording.

One benchmark WARC is made first: ~18 harbor pages (front page + articles) and 4 searches
recorded from the frozen newsroom by `core.replay.recorder.record`, plus synthetic exchanges
written with `WarcRecorder` (a ticker recorded 3 times with 3 bodies, a newsletter POST),
concatenated into one gzipped WARC. pywb (PyPI `pywb`, run outside the project's environment,
in proxy mode on loopback, content rewriting off so pages are served byte for byte) replays
that WARC; index lines without a status (our page-timeline metadata records) are left out of
pywb's index (`--pywb-keep-metadata` keeps them; recordings made before the timeline moved to
`urn:newsbench:timeline:` URIs were served by pywb as the page). A HAR 1.2 file converted
from the same exchanges feeds `context.route_from_har(not_found="abort")`.

Part 1, page load: time from `page.goto` to the `load` event, a fresh context (cold cache) per
navigation, through (a) the live newsroom via its proxy, (b) our replay (offline browser +
`ReplaySession.attach`), (c) pywb as the browser's proxy, (d) route_from_har (extra row).
Tools are interleaved per page (order rotated), `--rounds` passes; median and p90 per tool,
and ratios of medians measured in this run (replay/live, pywb/live, replay/pywb).

Part 2, match rate: requests issued with `fetch()` from the replayed harbor front page, the
same way in every tool, in six categories: exact URLs, added noise parameters, another slug
for the same article id, re-worded searches, a resource recorded 3 times (correct only in
recorded order) and a state-changing POST (same fields: must match; another newsletter: must
NOT be served the recorded response). Correct = body byte-identical (sha256) to the expected
recorded one. For ours the tag each request got in `session.log` is counted too.

    uv run python benchmarks/replay_bench.py [--rounds 5] [--pages 18]
    uv run python benchmarks/replay_bench.py --pywb /path/to/venv/bin/wayback
    uv run python benchmarks/replay_bench.py --pywb-mode banner   # pywb's default proxy mode
    uv run python benchmarks/replay_bench.py --pywb-mode wombat   # + wombat (capture-time Date)
    uv run python benchmarks/replay_bench.py --smoke   # 2 pages, 1 round, no pywb (offline)

Without `--pywb`, pywb is found with `uvx --from pywb` (tried with the default Python, then
3.11 and 3.10). If pywb cannot be started the script says why and reports the other tools.
Results: two tables, and JSON in benchmarks/results/replay_bench.json (with --smoke: in the
temporary directory, pywb left out). The recording is made by `replay_recording.py`, pywb run by
`replay_pywb.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import math
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import Counter, defaultdict
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from common import frozen_newsroom, parse_args
from replay_pywb import Pywb, PywbError, find_pywb, pywb_inserts
from replay_recording import (
    ARTICLE,
    FORM,
    HARBOR,
    NEWSLETTER,
    SEARCHES,
    SIGNUP,
    SIGNUP_BODY,
    TICKER,
    TICKS,
    article_urls,
    concat,
    search_url,
    sha,
    write_har,
    write_synthetic,
)

from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.replay.recorder import record
from newsbench_dagster.core.replay.replayer import Recording
from newsbench_dagster.core.web.network import Routing

RESULTS = Path(__file__).parent / "results" / "replay_bench.json"
CATEGORIES = ("exact", "noise", "identity", "search", "sequence", "state")
LOAD_TOOLS = ("live", "replay", "pywb", "har")
MATCH_TOOLS = ("replay", "pywb", "har")

# fetch() from the page, binary-safe; a network error (an aborted route) is returned as such.
FETCH_JS = """async ({url, method, body, headers}) => {
  try {
    const r = await fetch(url, {method, body: body === null ? undefined : body, headers,
                                cache: "no-store", credentials: "omit"});
    const bytes = new Uint8Array(await r.arrayBuffer());
    let s = "";
    for (let i = 0; i < bytes.length; i += 8192)
      s += String.fromCharCode.apply(null, bytes.subarray(i, i + 8192));
    return {status: r.status, body: btoa(s)};
  } catch (e) {
    return {status: null, error: String(e)};
  }
}"""


def p90(xs: list[float]) -> float:
    ordered = sorted(xs)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


# -- tools -------------------------------------------------------------------------------------
class Tools:
    """One browser per tool, and a fresh context per use."""

    def __init__(self, pw, rec: Recording, har: Path, live: str, pywb: str | None) -> None:
        self.pw, self.rec, self.har = pw, rec, har
        self.options = {
            "live": BrowserOptions(routing=Routing.via_proxy(live)),
            "replay": BrowserOptions(routing=Routing.offline()),
        }
        if pywb:
            self.options["pywb"] = BrowserOptions(routing=Routing.via_proxy(pywb))
        self.options["har"] = self.options["replay"]
        self.browsers: dict = {}

    @property
    def names(self) -> list[str]:
        return list(self.options)

    async def launch(self) -> None:
        for name, opts in self.options.items():
            shared = next((b for n, b in self.browsers.items() if self.options[n] is opts), None)
            self.browsers[name] = shared or await self.pw.chromium.launch(**opts.launch_kwargs())

    async def context(self, tool: str, url: str):
        """A new context for `tool`, and our replay session when the tool is ours."""
        opts = self.options[tool]
        context = await self.browsers[tool].new_context(**opts.context_kwargs())
        session = None
        if tool == "replay":
            session = self.rec.session()
            await session.attach(context, self.rec.clock_at(url))
        elif tool == "har":
            await context.route_from_har(self.har, not_found="abort")
        return context, session

    async def close(self) -> None:
        for browser in {id(b): b for b in self.browsers.values()}.values():
            await browser.close()


# -- part 1 ------------------------------------------------------------------------------------
async def load_once(tools: Tools, tool: str, url: str, expected: str) -> dict:
    context, _ = await tools.context(tool, url)
    try:
        page = await context.new_page()
        t0 = time.perf_counter()
        try:
            response = await page.goto(url, wait_until="load", timeout=20_000)
        except Exception as e:  # noqa: BLE001 - a failed load is a data point, said so
            return {"ms": None, "error": str(e).splitlines()[0][:160]}
        ms = (time.perf_counter() - t0) * 1000
        body = await response.body() if response else b""
        return {
            "ms": ms,
            "status": response.status if response else None,
            "same": sha(body) == expected,
        }
    finally:
        await context.close()


async def page_loads(tools: Tools, pages: list[str], expected: dict[str, str], rounds: int):
    names = tools.names
    for tool in names:  # warm-up: browser processes, pywb's index, the HAR parse
        await load_once(tools, tool, pages[0], expected[pages[0]])
    samples: dict[str, list[dict]] = defaultdict(list)
    for r in range(rounds):
        t0 = time.perf_counter()
        for i, url in enumerate(pages):
            k = (r + i) % len(names)
            for tool in names[k:] + names[:k]:
                res = await load_once(tools, tool, url, expected[url])
                samples[tool].append({"round": r, "url": url, **res})
        line = []
        for tool in names:
            ms = [s["ms"] for s in samples[tool] if s["round"] == r and s["ms"] is not None]
            line.append(f"{tool} {statistics.median(ms):.0f}" if ms else f"{tool} -")
        print(
            f"round {r + 1}: median ms " + ", ".join(line) + f"  ({time.perf_counter() - t0:.0f} s)"
        )
    return samples


def summarise_loads(samples: dict[str, list[dict]]) -> dict:
    out: dict = {}
    for tool, xs in samples.items():
        ms = [x["ms"] for x in xs if x["ms"] is not None]
        out[tool] = {
            "loads": len(xs),
            "failed": sum(x["ms"] is None for x in xs),
            "doc_identical": sum(bool(x.get("same")) for x in xs),
            "median_ms": statistics.median(ms) if ms else None,
            "p90_ms": p90(ms) if ms else None,
            "mean_ms": statistics.fmean(ms) if ms else None,
        }
        errors = Counter(x["error"] for x in xs if x.get("error"))
        if errors:
            out[tool]["errors"] = dict(errors.most_common(3))
    return out


def paired_ratio(samples: dict[str, list[dict]], a: str, b: str) -> float | None:
    """Median over (round, page) of a's time / b's time: robust to drift between rounds."""
    bs = {(x["round"], x["url"]): x["ms"] for x in samples.get(b, []) if x["ms"]}
    ratios = [
        x["ms"] / bs[k]
        for x in samples.get(a, [])
        if x["ms"] and (k := (x["round"], x["url"])) in bs
    ]
    return statistics.median(ratios) if ratios else None


# -- part 2 ------------------------------------------------------------------------------------
def request_set(rec: Recording, pages: list[str]) -> list[dict]:
    """Every request of Part 2 with the sha256 of the body it must (or, negative, must not) get."""
    by_url: dict[str, list] = defaultdict(list)
    for ex in rec.exchanges:
        if ex.method == "GET":
            by_url[ex.url].append(ex)
    body = {u: rec.payload(xs[0]).body for u, xs in by_url.items()}
    items: list[dict] = []

    def add(category, url, expect, method="GET", data=None, headers=None, negative=False, note=""):
        items.append(
            {
                "category": category,
                "method": method,
                "url": url,
                "data": data,
                "headers": headers or {},
                "expect": sha(expect),
                "negative": negative,
                "note": note,
            }
        )

    blocked = rec.rules.block_paths
    for url, xs in by_url.items():
        if url == TICKER or any(p.search(urlsplit(url).path) for p in blocked):
            continue  # the ticker is category 5; beacons are answered 204 by design
        if len({rec.payload(x).body for x in xs}) == 1:
            add("exact", url, body[url])
    articles = [u for u in pages if ARTICLE.match(urlsplit(u).path)]
    most_read = f"{HARBOR}/fragments/most-read"
    bases = [pages[0], *articles[:3], search_url(next(iter(SEARCHES)))]
    bases += [most_read] if most_read in body else []
    now = time.time()
    noise = {
        "utm": "utm_source=newsletter&utm_medium=email&utm_campaign=weekend",
        "t": f"t={int(now)}",
        "_": f"_={int(now * 1000)}",
        "sessionid": "sessionid=8f3a2c91d4e7",
        "fbclid": "fbclid=IwAR2xQv7nKp0Zr4",
    }
    for base in bases:
        for name, extra in noise.items():
            add("noise", base + ("&" if "?" in base else "?") + extra, body[base], note=name)
    for url in articles[:10]:
        section, _, ident = ARTICLE.match(urlsplit(url).path).groups()
        other = f"{HARBOR}/news/{section}/a-completely-different-headline-{ident}"
        add("identity", other, body[url], note=url)
    for query, asks in SEARCHES.items():
        for ask, note in zip(asks, ("re-ordered", "one word changed"), strict=True):
            add("search", search_url(ask), body[search_url(query)], note=f"{note}: {query}")
    for i, tick in enumerate(TICKS, 1):
        add("sequence", TICKER, tick, note=f"request {i} of 3")
    form = FORM
    add("state", NEWSLETTER, SIGNUP_BODY, "POST", SIGNUP, form, note="same body")
    reordered = "email=reader%40example.com&newsletter=morning"
    add("state", NEWSLETTER, SIGNUP_BODY, "POST", reordered, form, note="same fields re-ordered")
    other = "newsletter=evening&email=reader%40example.com"
    add("state", NEWSLETTER, SIGNUP_BODY, "POST", other, form, True, "other newsletter: miss")
    return items


async def match_run(tools: Tools, tool: str, items: list[dict]) -> list[dict]:
    """All items in order, from one replayed front page (one context, one replay session)."""
    front = f"{HARBOR}/"
    context, session = await tools.context(tool, front)
    out = []
    try:
        page = await context.new_page()
        await page.goto(front, wait_until="load", timeout=20_000)
        for item in items:
            before = len(session.log) if session else 0
            args = {k: item[k] for k in ("url", "method", "headers")} | {"body": item["data"]}
            got = await page.evaluate(FETCH_JS, args)
            served = base64.b64decode(got["body"]) if got.get("body") is not None else None
            hit = served is not None and sha(served) == item["expect"]
            res = {"status": got.get("status"), "correct": hit != item["negative"]}
            if got.get("error"):
                res["error"] = got["error"][:120]
            elif served is not None:
                res["served_sha256"] = sha(served)[:16]
                if len(served) <= 80:
                    res["served_text"] = served.decode("utf-8", "replace")
            if session:
                mine = [e for e in session.log[before:] if e["url"] == item["url"]]
                res["tag"] = mine[-1]["tag"] if mine else "none"
                res["rule"] = mine[-1]["rule"] if mine else ""
            out.append(res)
    finally:
        await context.close()
    return out


def summarise_matches(items: list[dict], runs: dict[str, list[dict]]) -> dict:
    out: dict = {}
    for tool, results in runs.items():
        per: dict = {}
        for cat in CATEGORIES:
            rs = [r for it, r in zip(items, results, strict=True) if it["category"] == cat]
            per[cat] = {"correct": sum(r["correct"] for r in rs), "n": len(rs)}
            if tool == "replay":
                per[cat]["tags"] = dict(Counter(r["tag"] for r in rs))
        per["overall"] = {"correct": sum(r["correct"] for r in results), "n": len(results)}
        seq = [r for it, r in zip(items, results, strict=True) if it["category"] == "sequence"]
        per["sequence"]["whole_sequence_in_order"] = all(r["correct"] for r in seq)
        out[tool] = per
    return out


# -- main --------------------------------------------------------------------------------------
def fmt(x: float | None, spec: str = ".0f") -> str:
    return "-" if x is None else format(x, spec)


async def run(args: argparse.Namespace, work: Path) -> dict:
    from playwright.async_api import async_playwright

    report: dict = {"config": vars(args) | {"started": datetime.now(UTC).isoformat()}}
    report["machine"] = {"cpus": os.cpu_count(), "loadavg_start": os.getloadavg()}
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    newsroom = ExitStack()
    server, _ = newsroom.enter_context(frozen_newsroom())
    pywb = None
    try:
        live = BrowserOptions(routing=Routing.via_proxy(server.address))
        t0 = time.perf_counter()
        articles = await article_urls(live, args.pages - 1)
        pages = [f"{HARBOR}/", *articles]
        searches = [search_url(q) for q in SEARCHES]
        recorded = work / "recorded.warc.gz"
        summary = await record(pages + searches, recorded, live, settle_ms=200)
        write_synthetic(work / "synthetic.warc.gz")
        warc = work / "bench.warc.gz"
        concat(warc, recorded, work / "synthetic.warc.gz")
        rec = Recording.open(warc)
        har = work / "bench.har"
        n_har = write_har(rec, har)
        print(
            f"recorded {len(pages)} pages + {len(searches)} searches: {summary.exchanges} "
            f"exchanges (+4 synthetic), {len(summary.failures)} failures, "
            f"{warc.stat().st_size // 1024} KB WARC, {n_har} HAR entries "
            f"({time.perf_counter() - t0:.0f} s)"
        )
        report["recording"] = {
            "pages": pages,
            "searches": searches,
            "exchanges": len(rec.exchanges),
            "failures": summary.failures,
            "warc_bytes": warc.stat().st_size,
        }
        if args.keep:
            shutil.copy(warc, RESULTS.parent / "replay_bench.warc.gz")
            shutil.copy(har, RESULTS.parent / "replay_bench.har")

        pywb_address, report["pywb"] = None, {"available": False}
        if not args.no_pywb:
            try:
                t0 = time.perf_counter()
                bindir, how = find_pywb(args.pywb)
                pywb = Pywb(bindir, work / "pywb", warc, args.pywb_mode, args.pywb_keep_metadata)
                pywb_address = pywb.start()
                version = subprocess.run(
                    [str(bindir / "wayback"), "--version"], capture_output=True, text=True
                ).stdout.strip()
                inserts = pywb_inserts(pywb, rec, f"{HARBOR}/")
                report["pywb"] = {
                    "available": True,
                    "found_with": how,
                    "version": version,
                    "address": pywb_address,
                    "mode": args.pywb_mode,
                    "front_page_served": inserts,
                    **pywb.notes,
                }
                said = (
                    "unchanged"
                    if inserts["identical"]
                    else (
                        f"with {inserts['bytes_added']:+d} bytes ({', '.join(inserts['markers'])})"
                    )
                )
                print(
                    f"pywb: {version} ({how}) on {pywb_address}, proxy mode "
                    f"{args.pywb_mode}, front page served {said}; "
                    f"{pywb.notes['index_entries_dropped']} metadata index entries dropped "
                    f"({time.perf_counter() - t0:.0f} s)"
                )
            except (PywbError, OSError, httpx.HTTPError, subprocess.SubprocessError) as e:
                print(f"pywb: NOT AVAILABLE, its numbers are left out: {e}")
                report["pywb"] = {"available": False, "error": str(e)}
                if pywb:
                    pywb.stop()
                pywb = pywb_address = None

        expected = {
            u: sha(next(rec.payload(e).body for e in rec.exchanges if e.url == u)) for u in pages
        }
        async with async_playwright() as pw:
            tools = Tools(pw, rec, har, server.address, pywb_address)
            await tools.launch()
            # route_from_har must replay an exact URL before its numbers mean anything.
            probe = await load_once(tools, "har", pages[1], expected[pages[1]])
            if not probe.get("same"):
                raise SystemExit(f"route_from_har does not replay {pages[1]}: {probe}")

            names = ", ".join(tools.names)
            print(f"\npart 1: page load, {len(pages)} pages x {args.rounds} rounds: {names}")
            samples = await page_loads(tools, pages, expected, args.rounds)
            loads = summarise_loads(samples)
            ratios = {}
            for a, b in (("replay", "live"), ("pywb", "live"), ("replay", "pywb"), ("har", "live")):
                if loads.get(a, {}).get("median_ms") and loads.get(b, {}).get("median_ms"):
                    ratios[f"{a}/{b}"] = {
                        "of_medians": loads[a]["median_ms"] / loads[b]["median_ms"],
                        "paired_median": paired_ratio(samples, a, b),
                    }
            report["page_load"] = {"tools": loads, "ratios": ratios, "samples": samples}

            items = request_set(rec, pages)
            print(f"\npart 2: match rate, {len(items)} requests per tool")
            runs = {}
            for tool in [t for t in MATCH_TOOLS if t in tools.names]:
                runs[tool] = await match_run(tools, tool, items)
            matches = summarise_matches(items, runs)
            report["match_rate"] = {
                "tools": matches,
                "items": [
                    it | {"results": {t: runs[t][i] for t in runs}} for i, it in enumerate(items)
                ],
            }
            await tools.close()
    finally:
        if pywb:
            pywb.stop()
        newsroom.close()
    report["machine"]["loadavg_end"] = os.getloadavg()
    print_tables(report)
    return report


def print_tables(report: dict) -> None:
    loads, ratios = report["page_load"]["tools"], report["page_load"]["ratios"]
    print("\npage load (goto -> load event, fresh context), ms")
    head = ("loads", "failed", "doc same", "median", "p90", "mean")
    print(f"{'tool':8}" + "".join(f"{h:>9}" for h in head))
    for tool, s in loads.items():
        cells = [str(s["loads"]), str(s["failed"]), str(s["doc_identical"])]
        cells += [fmt(s[k], ".1f") for k in ("median_ms", "p90_ms", "mean_ms")]
        print(f"{tool:8}" + "".join(f"{c:>9}" for c in cells))
    for name, r in ratios.items():
        paired = fmt(r["paired_median"], ".2f")
        print(f"ratio {name:12} {r['of_medians']:.2f}  (median of paired ratios {paired})")
    if not report["pywb"].get("available"):
        print(f"pywb: not measured ({report['pywb'].get('error', 'disabled')})")

    matches = report["match_rate"]["tools"]
    tools = list(matches)
    print("\nmatch rate on noisy re-requests: correct / requests")
    print(f"{'category':10}" + "".join(f"{t:>14}" for t in tools) + "   ours: tags")
    for cat in (*CATEGORIES, "overall"):
        cells = ""
        for t in tools:
            c = matches[t][cat]
            cells += f"{c['correct']:>4}/{c['n']:<3} {c['correct'] / c['n']:5.0%}"
        tags = matches.get("replay", {}).get(cat, {}).get("tags", {})
        tag_text = ", ".join(f"{k} {v}" for k, v in sorted(tags.items()))
        print(f"{cat:10}{cells}   {tag_text}")
    seq = {t: matches[t]["sequence"]["whole_sequence_in_order"] for t in tools}
    print(
        "ticker served in recorded order: "
        + ", ".join(f"{t} {'yes' if v else 'no'}" for t, v in seq.items())
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="page-load passes over the pages")
    parser.add_argument("--pages", type=int, default=18, help="front page + articles to record")
    parser.add_argument("--pywb", help="path to pywb's `wayback` (default: uvx --from pywb)")
    parser.add_argument(
        "--pywb-mode",
        choices=("identity", "banner", "wombat"),
        default="identity",
        help="identity: pywb serves the recorded bytes (enable_content_rewrite: false); "
        "banner: pywb's default proxy mode (inserts a wbinfo script into HTML); "
        "wombat: banner plus wombatProxyMode.js (enable_wombat: true)",
    )
    parser.add_argument(
        "--pywb-keep-metadata",
        action="store_true",
        help="keep our recorder's metadata records in pywb's index (pywb then serves them)",
    )
    parser.add_argument("--no-pywb", action="store_true", help="leave pywb out")
    parser.add_argument("--keep", action="store_true", help="copy the WARC and HAR to results/")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results JSON")
    # Smoke: pywb would be fetched from PyPI, so it is left out; results not over the real ones.
    smoke_out = Path(tempfile.gettempdir()) / "replay_bench_smoke.json"
    args = parse_args(parser, pages=2, rounds=1, no_pywb=True, keep=False, out=smoke_out)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="replay_bench-") as tmp:
        report = asyncio.run(run(args, Path(tmp)))
    report["seconds"] = round(time.perf_counter() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    print(f"\n{report['seconds']:.0f} s; results in {args.out}")


if __name__ == "__main__":
    main()
