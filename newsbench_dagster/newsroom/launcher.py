"""Making sure a newsroom answers on a port: reuse a running one, or start one in-process.

Content is a pure function of (seed, site, time), so any newsroom with the same seed and
revision serves the same pages; a different seed on the port is an error, not a silent swap.
A newsroom frozen at an instant serves that instant's pages to anyone, so a run of any hour
can be reproduced; asking for one instant and finding another on the port is an error too.
"""

from __future__ import annotations

import errno
import json
import time
import urllib.error
import urllib.request
from datetime import datetime

from newsbench_dagster.core.web.network import Routing, World
from newsbench_dagster.newsroom.clock import FixedClock, as_utc
from newsbench_dagster.newsroom.exchange import RUN_HEADER, VARIANT_HEADER
from newsbench_dagster.newsroom.server import HEALTH_PATH, NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom


def newsroom_routing(address: str, headers: dict[str, str] | None = None) -> Routing:
    """How the browser and the fetcher reach the newsroom at `address` (its proxy): each run
    is its own reader, scoped by the run header, with its event log read back from the
    control API."""
    return Routing.via_proxy(
        address,
        headers=headers,
        run_header=RUN_HEADER,
        events_url=f"{address}/__newsroom/events?scope=run:{{scope}}",
    )


def newsroom_world(port: int, health: dict, variant: int | None = None) -> World:
    """The newsroom on `port` as the runs' world: its routing (with the seeded form layout
    `variant` when one is chosen) and the manifest every run records (seed, revision, variant
    and the header that scopes each run's state), from the server's `health` document."""
    headers = {VARIANT_HEADER: str(variant)} if variant is not None else {}
    return World(
        newsroom_routing(f"http://127.0.0.1:{port}", headers),
        {
            "kind": "newsroom",
            "seed": health.get("seed"),
            "revision": health.get("revision"),
            "variant": variant,
            "frozen_at": health.get("frozen_at"),
            "run_scope_header": RUN_HEADER,
        },
    )


class NewsroomUnavailable(RuntimeError):
    """Something else holds the port, or a newsroom with another seed does."""


def health(port: int, timeout: float = 2.0) -> dict | None:
    """The health document of the newsroom on `port`, or None if nothing answers there."""
    url = f"http://127.0.0.1:{port}{HEALTH_PATH}"
    # No proxy from the environment: this is a loopback control call.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as resp:
            doc = json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("newsroom") else None


def ensure_newsroom(
    port: int, seed: int, at: datetime | None = None
) -> tuple[NewsroomServer | None, dict]:
    """Return (server we started or None if one was already running, its health document).
    With `at`, the newsroom's clock is frozen at that instant (a running one must be too)."""
    newsroom = Newsroom(seed=seed)
    frozen = as_utc(at).isoformat() if at is not None else None
    for _ in range(2):
        doc = health(port)
        if doc is not None and frozen is not None and doc.get("frozen_at") != frozen:
            found = doc.get("frozen_at")
            raise NewsroomUnavailable(
                f"the newsroom on port {port} is "
                f"{'frozen at ' + found if found else 'on real time'}; wanted frozen at "
                f"{frozen} (stop it or choose another port)"
            )
        if doc is not None:
            wanted = (seed, newsroom.revision)
            found = (doc.get("seed"), doc.get("revision"))
            if found != wanted:
                # Another seed, or a newsroom started from older code: it would serve a
                # different world than the one ground truth and tests describe.
                raise NewsroomUnavailable(
                    f"the newsroom on port {port} has seed {found[0]}, revision {found[1]}; "
                    f"wanted seed {wanted[0]}, revision {wanted[1]} "
                    "(stop it or choose another port)"
                )
            return None, doc
        try:
            clock = FixedClock(at) if at is not None else None
            server = NewsroomServer(newsroom, port=port, clock=clock).start()
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise
            time.sleep(0.5)  # another process may be starting one right now
            continue
        doc = health(port)
        if doc is None:
            server.stop()
            raise NewsroomUnavailable(f"newsroom started on port {port} but does not answer")
        return server, doc
    raise NewsroomUnavailable(f"port {port} is taken by something that is not a newsroom")
