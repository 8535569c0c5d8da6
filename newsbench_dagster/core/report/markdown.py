"""Markdown tables for the Dagster UI's asset metadata: a partition's runs with links to their
artifacts, and its scores by intent and failure class."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from newsbench_dagster.core.scoring.failures import kind_of

MAX_ROWS = 60  # the UI renders the table inline; the report has every run


def _cell(value) -> str:
    return "-" if value is None else str(value).replace("|", "\\|").replace("\n", " ")


def runs_table(runs: Iterable[dict]) -> str:
    """One line per run: status, environment failure, steps and links to its artifacts."""
    runs = list(runs)
    lines = [
        "| run | intent | agent | trial | status | env failure | steps | artifacts |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in runs[:MAX_ROWS]:
        links = " ".join(f"[{k}]({u})" for k, u in sorted((r.get("artifacts") or {}).items()))
        lines.append(
            "| "
            + " | ".join(
                _cell(v)
                for v in (
                    f"`{r['run_id']}`",
                    r.get("intent"),
                    r.get("agent_version"),
                    r.get("trial"),
                    r.get("run_status"),
                    r.get("env_failure"),
                    r.get("steps"),
                )
            )
            + f" | {links or '-'} |"
        )
    if len(runs) > MAX_ROWS:
        lines.append(f"\n_{len(runs) - MAX_ROWS} more runs: see the day's report_")
    return "\n".join(lines)


def classes_by_intent(scores: Iterable[dict]) -> str:
    """Runs per intent (rows) and outcome class (columns), whose fault each class is."""
    table: dict[str, Counter] = defaultdict(Counter)
    for s in scores:
        table[s.get("intent") or "?"][s.get("failure_class") or "?"] += 1
    classes = sorted({c for row in table.values() for c in row}, key=lambda c: (c != "success", c))
    if not classes:
        return "_no runs_"
    head = " | ".join(f"{c} ({kind_of(c)})" if c != "success" else c for c in classes)
    lines = [f"| intent | runs | {head} |", "|---|---" + "|---" * len(classes) + "|"]
    for intent, row in sorted(table.items()):
        cells = " | ".join(str(row.get(c, 0)) for c in classes)
        lines.append(f"| {intent} | {sum(row.values())} | {cells} |")
    return "\n".join(lines)
