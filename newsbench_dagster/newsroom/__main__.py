"""Serve the newsroom in the foreground: python -m newsbench_dagster.newsroom --port 8411."""

from __future__ import annotations

import argparse
import time
from datetime import datetime

from .clock import FixedClock, as_utc
from .server import NewsroomServer
from .world import DEFAULT_SEED, Newsroom


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m newsbench_dagster.newsroom")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    parser.add_argument("--port", type=int, default=8411)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--at", help="freeze the clock at this ISO instant (naive = UTC)")
    args = parser.parse_args(argv)

    clock = FixedClock(as_utc(datetime.fromisoformat(args.at))) if args.at else None
    server = NewsroomServer(Newsroom(seed=args.seed), host=args.host, port=args.port, clock=clock)
    server.start()
    print(f"newsroom serving at {server.address} (seed {args.seed}, clock {clock or 'real time'})")
    for spec in server.newsroom.sites:
        print(f"  {spec.key:8} {spec.origin}/  ({spec.name})")
    print(f"try: curl -x {server.address} http://{server.newsroom.sites[0].host}/")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
