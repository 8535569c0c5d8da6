"""State-changing pages: newsletter, notification settings, correction reports, checkout."""

from __future__ import annotations

from datetime import datetime

from .exchange import Request, Response
from .state import NewsroomState
from .world import SiteWorld


def handle(
    site: SiteWorld, request: Request, at: datetime, state: NewsroomState | None
) -> Response | None:
    """Answer the request if it is one of ours, else None (content routes take it)."""
    return None
