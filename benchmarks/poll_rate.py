"""Polls per second: every allowlisted site's feeds, sitemap and homepage read and parsed by
the producer's poller, against a frozen newsroom, cold (no validators) and conditional (the
validators of the previous poll: unchanged sources answer 304 with no body).

Measured twice: as the poller runs (per-origin spacing and robots Crawl-delay honoured, which
is what bounds a real poll) and with the spacing switched off (what a poll costs the machine).
Rounds alternate cold and conditional; medians are compared.

    uv run python benchmarks/poll_rate.py [--rounds 5]
    uv run python benchmarks/poll_rate.py --smoke   # one round, one site
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

from common import FROZEN_AT, frozen_newsroom, parse_args, sites

from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.tasks.poll import poll_site
from newsbench_dagster.core.web.network import Fetcher


def poll_all(routing, registry, chosen, store, validators, paced) -> tuple[float, int, int]:
    """Seconds, items and body bytes of one poll of each `chosen` site (robots known)."""
    # Unpaced: measuring the fetcher's cost, not its politeness.
    with Fetcher(routing, registry.allowed_origins, pace=paced) as fetcher:
        for origin in registry.allowed_origins:
            fetcher.robots(origin)
        before = len(fetcher.records)
        started = time.perf_counter()
        items = 0
        for site in chosen:
            rows = poll_site(site, fetcher, store, FROZEN_AT.date(), validators.get(site.key))
            items += sum(1 for r in rows if r.item_url)
        seconds = time.perf_counter() - started
        body = sum(r.bytes for r in fetcher.records[before:])
    return seconds, items, body


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sites", help="comma-separated site keys (default: all)")
    args = parse_args(ap, rounds=1, sites="harbor")
    registry = sites()
    chosen = [registry.get(k) for k in args.sites.split(",")] if args.sites else registry.sites
    n_sites = len(chosen)
    out: dict = {"sites": n_sites, "rounds": args.rounds}
    with frozen_newsroom() as (_, world), tempfile.TemporaryDirectory() as tmp:
        routing = world.routing
        store = LocalArtifactStore(tmp)
        for paced in (True, False):
            times: dict[str, list[float]] = {"cold": [], "conditional": []}
            sizes: dict[str, int] = {}
            warm: dict[str, dict] = {s.key: {} for s in chosen}
            poll_all(routing, registry, chosen, store, warm, paced)  # fills the validators
            for r in range(args.rounds):
                order = ["cold", "conditional"] if r % 2 == 0 else ["conditional", "cold"]
                for mode in order:
                    validators = warm if mode == "conditional" else {}
                    polled = poll_all(routing, registry, chosen, store, validators, paced)
                    seconds, items, body = polled
                    times[mode].append(seconds)
                    sizes[mode] = body
                    out.setdefault("items_per_poll_of_all_sites", items)
            label = "paced" if paced else "unpaced"
            med = {m: statistics.median(v) for m, v in times.items()}
            out[label] = {
                "site_polls_per_s": {m: round(n_sites / s, 2) for m, s in med.items()},
                "body_bytes_per_poll": sizes,
                "ratio_conditional_over_cold": round(med["conditional"] / med["cold"], 3),
            }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
