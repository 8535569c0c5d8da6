"""The run log of a batch of runs: one line per finished run, with the count so far."""

from collections import Counter
from collections.abc import Callable

from dagster import AssetExecutionContext


class RunLog:
    """`progress` is the runner's per-run callback; `statuses` counts how the runs ended."""

    def __init__(self, context: AssetExecutionContext, total: int) -> None:
        self.context, self.total, self.statuses = context, total, Counter()

    @property
    def progress(self) -> Callable[[dict], None]:
        def log(row: dict) -> None:
            self.statuses[row["run_status"]] += 1
            failure = f" ({row['env_failure']})" if row.get("env_failure") else ""
            self.context.log.info(
                f"run {sum(self.statuses.values())}/{self.total}: {row['agent_version']} "
                f"{row['intent']} -> {row['run_status']}{failure}"
            )

        return log
