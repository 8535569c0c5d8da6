"""Crash points for tests: places where a test may have the process killed, to prove that what
a killed run leaves behind is consistent (issue #21). Nothing happens unless the environment
variable below names the point; it is never set outside tests.

`NEWSBENCH_TEST_CRASH_AT=<point>` or `<point>:<what>` (a table, an artifact's file name): the
process sends itself SIGKILL there, as `kill -9` or the OOM killer would, with no cleanup.
"""

from __future__ import annotations

import os
import signal

ENV = "NEWSBENCH_TEST_CRASH_AT"

# The points: a run of the agent_runs batch has finished (its artifacts written, the browser
# still open for the others); a table's rows are written inside the transaction, not yet
# committed; an artifact's bytes are written to its temporary file, not yet in place.
AGENT_RUN_DONE = "agent_run_done"
WAREHOUSE_WRITE = "warehouse_write"
ARTIFACT_WRITE = "artifact_write"


def crash_point(point: str, what: str = "") -> None:
    wanted = os.environ.get(ENV)
    if wanted and wanted in (point, f"{point}:{what}"):
        os.kill(os.getpid(), signal.SIGKILL)
