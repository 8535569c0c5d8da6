"""Requests per second the newsroom sustains on loopback, against a static-file baseline.

Both servers run in their own process (the newsroom with its clock frozen); the client runs
in this one with keep-alive connections in threads, as a proxy client (absolute-form request
lines). The baseline is Python's ThreadingHTTPServer answering one fixed 10 KB page: the same
socket and thread machinery without any content generation, so the ratio isolates what the
newsroom's routing, templates and state cost. Rounds alternate (newsroom, baseline,
baseline, newsroom, ...) and the medians are compared. The last line printed is the ratio.

    uv run python benchmarks/newsroom_rps.py [--seconds 4] [--rounds 3] [--connections 4]
    uv run python benchmarks/newsroom_rps.py --smoke   # one round of 0.5 s, 2 connections
"""

from __future__ import annotations

import argparse
import http.client
import socket
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from common import FROZEN_AT, free_port, parse_args

from newsbench_dagster.newsroom.world import Newsroom

BASELINE_BODY = b"<!doctype html><title>static</title>" + b"x" * 10_000


def serve_baseline(port: int) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(BASELINE_BODY)))
            self.end_headers()
            self.wfile.write(BASELINE_BODY)

        def log_message(self, *args: object) -> None:
            pass

    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def urls() -> list[str]:
    """A realistic mix over every site: front pages, articles, feeds, listings, live blogs."""
    newsroom = Newsroom()
    out: list[str] = []
    for spec in newsroom.sites:
        site = newsroom.site(spec.key)
        out += [f"{spec.origin}/", spec.origin + spec.feed_path, f"{spec.origin}/robots.txt"]
        out += [story.url for story in site.stories(FROZEN_AT, 6)]
        out += [site.url(site.section_path(spec.sections[0])), site.current_liveblog(FROZEN_AT).url]
        out.append(f"{spec.origin}/corrections")
    return out


def wait_for(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server on port {port} did not come up")


def load(port: int, targets: list[str], seconds: float, connections: int) -> dict:
    """Hammer the server for `seconds`; returns rps, latency percentiles and errors."""
    stop = time.monotonic() + seconds
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()

    def worker(offset: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        mine: list[float] = []
        i = offset
        while time.monotonic() < stop:
            url = targets[i % len(targets)]
            i += 1
            t0 = time.perf_counter()
            try:
                conn.request("GET", url)
                response = conn.getresponse()
                response.read()
                if response.status != 200:
                    errors[0] += 1
            except (OSError, http.client.HTTPException):
                errors[0] += 1
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                continue
            mine.append(time.perf_counter() - t0)
        conn.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(n * 7,)) for n in range(connections)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000  # noqa: E731
    return {
        "requests": len(latencies),
        "rps": len(latencies) / elapsed,
        "p50_ms": pick(0.5),
        "p95_ms": pick(0.95),
        "errors": errors[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="load per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=4, help="keep-alive client threads")
    parser.add_argument("--serve-baseline", type=int, help=argparse.SUPPRESS)
    args = parse_args(parser, seconds=0.5, rounds=1, connections=2)
    if args.serve_baseline:
        serve_baseline(args.serve_baseline)
        return

    news_port, base_port = free_port(), free_port()
    newsroom_cmd = [sys.executable, "-m", "newsbench_dagster.newsroom", "--port", str(news_port)]
    newsroom_cmd += ["--at", FROZEN_AT.isoformat()]
    procs = [
        subprocess.Popen(newsroom_cmd, stdout=subprocess.DEVNULL),
        subprocess.Popen(
            [sys.executable, __file__, "--serve-baseline", str(base_port)],
            stdout=subprocess.DEVNULL,
        ),
    ]
    try:
        wait_for(news_port)
        wait_for(base_port)
        targets = urls()
        static = [f"http://static.test/{i}" for i in range(len(targets))]
        warm = min(1.0, args.seconds)  # warm template and story caches
        load(news_port, targets, warm, args.connections)
        load(base_port, static, warm, args.connections)
        results: dict[str, list[dict]] = {"newsroom": [], "baseline": []}
        order = ["newsroom", "baseline"]
        for r in range(args.rounds):
            for name in order if r % 2 == 0 else order[::-1]:
                port, urls_ = (news_port, targets) if name == "newsroom" else (base_port, static)
                res = load(port, urls_, args.seconds, args.connections)
                results[name].append(res)
                print(
                    f"round {r + 1} {name:8} {res['rps']:8.0f} req/s  p50 {res['p50_ms']:.2f} ms"
                    f"  p95 {res['p95_ms']:.2f} ms  errors {res['errors']}"
                )
        news = statistics.median(x["rps"] for x in results["newsroom"])
        base = statistics.median(x["rps"] for x in results["baseline"])
        errors = sum(x["errors"] for xs in results.values() for x in xs)
        print(f"{len(targets)} distinct newsroom URLs over 6 sites; {args.connections} connections")
        print(f"median newsroom {news:.0f} req/s, baseline {base:.0f} req/s, errors {errors}")
        print(f"ratio newsroom/baseline: {news / base:.2f}")
    finally:
        for p in procs:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
