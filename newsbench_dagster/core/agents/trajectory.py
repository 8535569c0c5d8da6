"""What an agent did in a run, as the harness keeps it: the trajectory (one entry per step, the
answers, the tokens used, the site's own failures), `ToolStep`, the one place a tool call's
entry is timed and a failed call recorded, and the byte cut of what is kept of a page.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from playwright.async_api import Error as PlaywrightError


@dataclass
class Answer:
    value: dict[str, Any]
    seconds: float  # since the agent started
    claims_success: bool


@dataclass
class Trajectory:
    steps: list[dict] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    tokens: int = 0
    # Navigations to an allowed site that failed at the network level (or 5xx): evidence that
    # the environment, not the agent, broke.
    site_errors: list[str] = field(default_factory=list)


def first_line(e: BaseException) -> str:
    """An exception as one line: Playwright's messages go on with call logs."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def truncate_utf8(text: str, limit: int) -> tuple[str, bool]:
    """The text cut to `limit` UTF-8 bytes (never inside a character), and whether it was."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text, False
    return raw[:limit].decode("utf-8", errors="ignore"), True


class ToolStep:
    """A tool call's trajectory entry around the browser work the call does:

        with self._step("back", {}) as step:
            await self.page.go_back(...)
            step.note(url=self.page.url)
            return {"ok": True, "url": self.page.url}
        return step.failure()

    Leaving the block records the latency and the fields `note`d on the way. A Playwright
    error inside (a target that is not there, a timeout, a navigation that failed: the page's
    answer, not a bug) is recorded as the step's `error` and swallowed, so the code after the
    block runs and returns the call's failure. Any other exception goes through untouched.
    """

    def __init__(
        self, entry: dict, catch: tuple[type[BaseException], ...] = (PlaywrightError,)
    ) -> None:
        self.entry = entry
        self.catch = catch
        self.error: str | None = None
        self._noted: dict[str, Any] = {}
        self._started = time.perf_counter()

    def __enter__(self) -> ToolStep:
        self._started = time.perf_counter()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if exc is not None and not isinstance(exc, self.catch):
            return False
        self.entry["latency_ms"] = round((time.perf_counter() - self._started) * 1000, 1)
        if exc is None:
            self.entry.update(self._noted)
            return False
        self.error = first_line(exc)
        # What was noted before the failure described a success that did not happen.
        self.entry.update(status="error", error=self.error)
        return True

    def note(self, **fields: Any) -> None:
        """Fields for the entry when the call succeeds (the URL it ended on, what it found)."""
        self._noted.update(fields)

    def refuse(self, error: str) -> dict:
        """End the call as failed without asking the browser (a tab that does not exist)."""
        self.note(status="error", error=error)
        return {"ok": False, "error": error}

    def failure(self, **extra: Any) -> dict:
        """The call's result after a Playwright error: `ok` false, the error's first line."""
        return {"ok": False, "error": self.error, **extra}
