"""Launching Chromium for runs: the system Chromium when present, else Playwright's own."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from newsbench_dagster.core.web.network import Routing

# Flags measured to keep headless Chromium quiet and self-contained on a closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--no-first-run",
]

SYSTEM_CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def find_chromium(explicit: str | None = None) -> str | None:
    """Path of the browser to launch; None means Playwright's bundled browser."""
    if explicit:
        if not Path(explicit).exists():
            raise FileNotFoundError(f"browser executable not found: {explicit}")
        return explicit
    for candidate in SYSTEM_CHROMIUM:
        if Path(candidate).exists():
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class BrowserOptions:
    executable_path: str | None = None
    headless: bool = True
    routing: Routing = field(default_factory=Routing)
    viewport: tuple[int, int] = (1366, 900)
    locale: str = "en-US"
    timezone: str = "UTC"

    def launch_kwargs(self) -> dict:
        kwargs: dict = {
            "headless": self.headless,
            "args": CHROMIUM_ARGS + self.routing.chromium_args(),
        }
        path = find_chromium(self.executable_path)
        if path:
            kwargs["executable_path"] = path
        if self.routing.playwright_proxy():
            kwargs["proxy"] = self.routing.playwright_proxy()
        return kwargs

    def context_kwargs(self) -> dict:
        width, height = self.viewport
        return {
            "viewport": {"width": width, "height": height},
            "locale": self.locale,
            "timezone_id": self.timezone,
            "service_workers": "block",
        }
