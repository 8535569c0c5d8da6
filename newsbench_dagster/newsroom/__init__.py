"""A simulated news web for evaluating browser agents.

Several fictional news sites (`*.test` hosts) served from one loopback HTTP server. Content is a
pure function of (seed, site, time); ground truth is read through this Python API, never from the
pages. This package must not import dagster.
"""

from .render import Response, respond
from .server import FAULT_KINDS, Faults, NewsroomServer
from .world import FixedClock, FrontPage, Newsroom, SiteSpec, SiteWorld, Story, utc_now

__all__ = [
    "FAULT_KINDS",
    "Faults",
    "FixedClock",
    "FrontPage",
    "Newsroom",
    "NewsroomServer",
    "Response",
    "SiteSpec",
    "SiteWorld",
    "Story",
    "respond",
    "utc_now",
]
