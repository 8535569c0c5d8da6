"""Feed parsing throughput: every fixture under tests/fixtures/feeds parsed N times, then
documents per second per format (the kind the parser reports; errors grouped as "error";
the HTML error page, sniffed without a configured kind, shows as "homepage").

A measurement, not a test: numbers depend on the machine. Bigger, realistic documents are
made by repeating a fixture's items (--scale) so per-item cost shows next to per-document
overhead.

    uv run python benchmarks/feed_parse.py [-n 200] [--scale 1,50] [--json]
    uv run python benchmarks/feed_parse.py --smoke   # 2 parses per fixture, x1 and x2

The last line printed is the slowest format (docs/s) at the largest scale.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import defaultdict
from pathlib import Path

from common import parse_args

from newsbench_dagster.core.web.feeds import parse_document

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "feeds"
_REPEATABLE = re.compile(
    rb"(<item[ >].*?</item>|<entry[ >].*?</entry>|<url>.*?</url>|<sitemap>.*?</sitemap>)", re.S
)


def scaled(content: bytes, factor: int) -> bytes:
    """The document with its items repeated `factor` times (XML only; others unchanged)."""
    if factor == 1 or content[:2] == b"\x1f\x8b":
        return content
    items = _REPEATABLE.findall(content)
    if not items:
        return content
    last = content.rindex(items[-1]) + len(items[-1])
    return content[:last] + b"".join(items) * (factor - 1) + content[last:]


def measure(n: int, factor: int) -> dict[str, dict[str, float]]:
    docs = {"sum": defaultdict(float), "count": defaultdict(int), "items": defaultdict(int)}
    for path in sorted(FIXTURES.iterdir()):
        content = scaled(path.read_bytes(), factor)
        base = f"https://bench.test/feeds/{path.name}"
        parsed = parse_document(content, base)
        kind = "error" if parsed.error else parsed.kind
        start = time.perf_counter()
        for _ in range(n):
            parse_document(content, base)
        docs["sum"][kind] += time.perf_counter() - start
        docs["count"][kind] += n
        docs["items"][kind] += len(parsed.items) * n
    return {
        kind: {
            "docs_per_s": round(docs["count"][kind] / docs["sum"][kind], 1),
            "items_per_s": round(docs["items"][kind] / docs["sum"][kind], 1),
        }
        for kind in sorted(docs["sum"])
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=200, help="parses per fixture")
    ap.add_argument("--scale", default="1,50", help="item repetition factors, comma-separated")
    ap.add_argument("--json", action="store_true")
    args = parse_args(ap, n=2, scale="1,2")
    results = {f"x{f}": measure(args.n, int(f)) for f in args.scale.split(",")}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for scale, by_kind in results.items():
        print(f"items repeated {scale}, {args.n} parses per fixture")
        print(f"  {'format':<14} {'docs/s':>10} {'items/s':>12}")
        for kind, r in by_kind.items():
            print(f"  {kind:<14} {r['docs_per_s']:>10.1f} {r['items_per_s']:>12.1f}")
    scale, by_kind = list(results.items())[-1]
    kind = min(by_kind, key=lambda k: by_kind[k]["docs_per_s"])
    print(f"slowest format at {scale}: {kind}, {by_kind[kind]['docs_per_s']:.1f} docs/s")


if __name__ == "__main__":
    main()
