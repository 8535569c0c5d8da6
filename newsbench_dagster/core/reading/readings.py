"""A run's readings of the pages it saw: the page records, remembered by their HTML (the
harness's observation and the agent's `read_page` of the same document parse it once; the record
is a pure function of the HTML and URL, so this changes no result, only its cost), and the last
DOM read, which a read of the same page with no action in between reuses within `FRESH_S`
seconds instead of asking the page again."""

from __future__ import annotations

import copy
import time
from collections import OrderedDict
from typing import Any

from newsbench_dagster.core.reading.page import understand

# How old a DOM read may be and still stand for the page now, when nothing was done to it
# since: a fast agent reads the entry page milliseconds after the harness observed it, and
# answers milliseconds after its last read. A slower one (a model thinking) reads again.
FRESH_S = 1.0


class Readings:
    """`understand(html, url).as_dict()` for the last `size` documents; every call returns a
    fresh dict, so no reader can change what another is given."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self.hits = 0
        self._records: OrderedDict[tuple[str, str | None], Any] = OrderedDict()
        self.reused = 0
        # page, read, when, actions before it, whether the agent's tools took it
        self._last: tuple[Any, dict, float, int, bool] | None = None

    def keep(self, page: Any, read: dict, actions: int, by_agent: bool = False) -> None:
        """`read` (the page's metadata and document, as evaluated) is the last look at `page`,
        taken after `actions` page-changing steps of the run (by the agent's tools or not)."""
        self._last = (page, copy.deepcopy(read), time.monotonic(), actions, by_agent)

    def fresh(
        self, page: Any, url: str, actions: int, agents_only: bool = False, for_agent: bool = False
    ) -> dict | None:
        """A copy of the last read of `page` when it still stands: the page is at the same URL,
        no page-changing step was taken since, and it is at most FRESH_S old. `agents_only`:
        only a read the agent's tools took after its last step (an agent that drives the page
        by other means, over CDP, has its final page read again). `for_agent`: the agent's
        tools take this read (it then counts as theirs)."""
        if self._last is None:
            return None
        kept, read, when, kept_actions, by_agent = self._last
        if kept is not page or read.get("url") != url or kept_actions != actions:
            return None
        if agents_only and not by_agent:
            return None
        if time.monotonic() - when > FRESH_S:
            return None
        self.reused += 1
        if for_agent:
            self._last = (kept, read, when, kept_actions, True)
        return copy.deepcopy(read)

    def record(self, html: str, url: str | None) -> dict:
        key = (html, url)
        found = self._records.get(key)
        if found is None:
            found = self._records[key] = understand(html, url=url)
            if len(self._records) > self.size:
                self._records.popitem(last=False)
        else:
            self.hits += 1
            self._records.move_to_end(key)
        return found.as_dict()
