"""Every benchmark still runs: each script in benchmarks/ is run with `--smoke` (its real code
path end to end, real newsroom and Chromium where it uses them, tiny sizes) and must exit 0 and
print its summary. A new benchmark without `--smoke`, or without a summary check below, fails.

A script is a `benchmarks/*.py` with a `__main__` block; the others (common.py, ...) are the
modules the scripts share.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from newsbench_dagster.core.tasks.intents import ALL_INTENTS
from tests.support.local_model import require_local_model

pytestmark = pytest.mark.heavy(150)  # about 150 s on two busy cores (gate_e2e: 50)

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    p.stem
    for p in (ROOT / "benchmarks").glob("*.py")
    if 'if __name__ == "__main__":' in p.read_text(encoding="utf-8")
)
TIMEOUT_S = 240
# The first dev set (the smoke reads each set found beside the project; README: real_pages).
DEVSET = Path(
    os.environ.get("NEWSBENCH_DEVSET", str(ROOT.parent / "shared" / "devsets" / "pages")).split(
        os.pathsep
    )[0]
)


def positive(pattern: str, text: str) -> float:
    """The number `pattern`'s first group finds in `text`; it must be a positive number."""
    found = re.search(pattern, text, re.M)
    assert found, f"no line matching {pattern!r} in:\n{text}"
    value = float(found.group(1))
    assert value > 0 and math.isfinite(value), found.group(0)
    return value


def last_json(text: str) -> dict:
    """The JSON object the benchmark printed last (from its last line that is a lone "{")."""
    lines = text.splitlines()
    start = max(i for i, line in enumerate(lines) if line == "{")
    end = max(i for i, line in enumerate(lines) if line == "}")
    return json.loads("\n".join(lines[start : end + 1]))


def feed_parse(out: str) -> None:
    assert re.search(r"^  \w+ +[\d.]+ +[\d.]+$", out, re.M), out  # a row: format, docs/s, items/s
    positive(r"^slowest format at x\d+: \w+, ([\d.]+) docs/s\Z", out)


def gate_power(out: str) -> None:
    for scenario in ("measured", "noisy"):
        row = rf"^\| {scenario} \| [\d.]+% \[[\d.]+%, [\d.]+%\] \| [\d.]+% "
        assert re.search(row, out, re.M), out
    positive(r"^sequential: mean runs \d+ in the worst world, ([\d.]+) x the fixed .+$", out)
    assert re.search(r"^default gate: A/A block [\d.]+% .+, mean runs \d+\Z", out, re.M), out


def hour_sweep(out: str) -> None:
    # Every intent of the instant ran and passed, with a mean reward and freshness measured at
    # the instant; the table names the instant.
    row = re.search(r"^2026-11-30 00:00 +(\d+) +\1 +0 +0 +0 +([\d.]+) +([\d.]+)$", out, re.M)
    assert row and 0 < float(row.group(2)) <= 1 and 0 <= float(row.group(3)) <= 1, out
    found = re.search(r"^hour sweep: runs (\d+), reference failures 0, void 0\Z", out, re.M)
    assert found and int(found.group(1)) >= len(ALL_INTENTS), out


def hostile(out: str) -> None:
    # Every hostile input ran through the CLI, none past 1 GB or 60 s, none a traceback.
    found = re.search(r"^hostile inputs: (\d+), over the limits: 0 \(peak (\d+) MB, ", out, re.M)
    assert found and int(found.group(1)) >= 10, out
    assert "TRACEBACK" not in out and re.search(r"JSON nested deeper than 64 levels", out), out


def model_agent(out: str) -> None:
    # Every run of the real model ended scored or in an agent's class; none was excluded.
    found = re.search(
        r"^model agent: runs (\d+), scored (\d+), environment failures 0, capped \d+, "
        r"median tokens/task \d+, median s/call [\d.]+\Z",
        out,
        re.M,
    )
    assert found and found.group(1) == found.group(2) != "0", out
    assert re.search(r"^all +\d+ +\d+ +\d+% \[\d+%, \d+%\]$", out, re.M), out
    # Whether the model read before it acted: its gotos and the tool results in its prompts.
    grounding = (
        r"^goto calls: (\d+) \(grounded (\d+): .+; invented (\d+)\), grounded share "
        r"(\d+%|-); tool results in a prompt: max \d+, calls with any \d+/[1-9]\d*; runs with "
        r"a tool call \d+/[1-9]\d*$"
    )
    found = re.search(grounding, out, re.M)
    assert found and int(found.group(1)) == int(found.group(2)) + int(found.group(3)), out


def newsroom_rps(out: str) -> None:
    # Every one of the newsroom's URLs answered 200 (a non-200 counts as an error).
    assert re.search(r"^median newsroom \d+ req/s, baseline \d+ req/s, errors 0$", out, re.M)
    positive(r"^ratio newsroom/baseline: ([\d.]+)\Z", out)


def oracle_meta_eval(out: str) -> None:
    rows = {
        m.group(1): (float(m.group(2)), float(m.group(3)))
        for m in re.finditer(r"^(\w+) +(?:\d+ +){5}([\d.]+|nan) +([\d.]+|nan)$", out, re.M)
    }
    assert set(rows) == set(ALL_INTENTS), out  # every intent judged, read and state alike
    for intent, (precision, recall) in rows.items():
        assert 0 <= precision <= 1 and 0 <= recall <= 1, (intent, precision, recall)
    wrong = out.split("deliberately wrong answers", 1)[1].split("right answers written", 1)[0]
    assert len(re.findall(r"rejected \d+/[1-9]\d*$", wrong, re.M)) >= len(ALL_INTENTS), out
    assert re.search(r"^elapsed: \d+ s$", out, re.M), out


def overhead(out: str) -> None:
    summary = last_json(out)
    # The harness and the bare script did every task (the oracle passed each harness run).
    assert set(summary["ok"].values()) == {summary["tasks"]}, summary["ok"]
    positive(r"^ratio harness\(artifacts off\)/bare: ([\d.]+)\Z", out)


def poll_rate(out: str) -> None:
    summary = json.loads(out)
    assert summary["items_per_poll_of_all_sites"] > 0
    for mode in ("paced", "unpaced"):
        rates, sizes = summary[mode]["site_polls_per_s"], summary[mode]["body_bytes_per_poll"]
        assert min(rates.values()) > 0, summary
        # Unchanged sources answer the conditional poll with 304 and no body.
        assert sizes["conditional"] < sizes["cold"], summary


def replay_bench(out: str) -> None:
    assert "pywb: not measured" in out  # smoke mode never fetches pywb
    positive(r"^ratio replay/live +([\d.]+) ", out)
    overall = re.search(r"^overall +(\d+)/(\d+) ", out, re.M)
    assert overall and int(overall.group(1)) > 0, out
    assert re.search(r"^\d+ s; results in \S+\Z", out, re.M), out


def scale_out(out: str) -> None:
    # Both configurations ran every task once; their KPIs agree.
    rows = re.findall(r"^ +([12]) +[\d.]+ +(\d+) +[\d.]+  news_tasks (\d+)/\3, ", out, re.M)
    assert [w for w, *_ in rows] == ["1", "2"] and all(r == t for _, r, t in rows), out
    assert "tasks and kpi_daily equal to the serial run's: yes" in out, out
    positive(r"^scale-out: 2 workers speedup ([\d.]+), duplicates 0, lost 0\Z", out)


def scoring_throughput(out: str) -> None:
    assert re.search(r"^[1-9]\d* real runs, \d+ successes by the oracle$", out, re.M), out
    positive(r"^ratio oracle/json throughput: ([\d.]+)\Z", out)


def real_pages(out: str) -> None:
    for field in ("headline", "published", "authors"):
        # inspect, trafilatura, and htmldate twice (dates only), then "any reader": every
        # reader ran, on all pages and on each fold of the first set.
        for fold in (r"\*\*all\*\*", "postlight/parser", "mozilla/readability"):
            row = rf"^\| {fold} \| {field} \| \d+ \| [\d.]+ \| [\d.]+ \| ([\d.]+|–) \| "
            assert re.search(row, out, re.M), (fold, field, out)
    assert re.search(r"^inspect's rules were developed on: mozilla/readability, ", out, re.M)
    assert re.search(r"^errors: inspect 0, trafilatura \d+", out, re.M), out
    assert re.search(r"^inspect vs best library: headline [+-][\d.]+, published .+$", out, re.M)
    assert re.search(
        r"^ambiguous \(inspect read two supported values.*\): pages [\d.]+% ", out, re.M
    )
    # The other matching's figures: titles and dates exactly as the sources keep them.
    strict = r"^as the sources keep them \(--strict\), all pages: headline inspect [\d.]+, "
    assert re.search(strict + r"trafilatura [\d.]+; published inspect", out, re.M), out
    found = re.search(
        r"^real pages: headline [\d.]+, published [\d.]+, authors [\d.]+, "
        r"ambiguous [\d.]+%, behind-a-library folds (\d+) of (\d+)\Z",
        out,
        re.M,
    )
    assert found and int(found.group(1)) <= int(found.group(2)) >= 2, out


def gate_e2e(out: str) -> None:
    found = re.search(
        r"^gate e2e: A/A (\w+), baseline (\w+), degraded (\w+), runs (\d+), minutes ([\d.]+)\Z",
        out,
        re.M,
    )
    assert found, out
    aa, baseline, _, runs = found.group(1), found.group(2), found.group(3), int(found.group(4))
    # Even on one site's few tasks: an identical copy is never blocked, and the selector
    # baseline, broken by the redesign, is, with the site named.
    assert aa in ("pass", "insufficient_evidence") and baseline == "block", found.group(0)
    assert re.search(r"^\| baseline \| newsbench gate \| block \|.*site=harbor", out, re.M), out
    rows = re.findall(r"^\| (A/A|degraded) \| dagster \| \w+ \| (\d+) \| (\d+) \|", out, re.M)
    assert [r[0] for r in rows] == ["A/A", "degraded"] and runs > 0, out


def warehouse_snapshot(out: str) -> None:
    assert re.search(r"^ +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+$", out, re.M), out  # MB, ms, max, ms/MB
    positive(r"^snapshot publish at [\d.]+ MB: [\d.]+ ms, ([\d.]+) ms/MB\Z", out)


SUMMARIES: dict[str, Callable[[str], None]] = {
    f.__name__: f
    for f in (
        feed_parse,
        gate_e2e,
        gate_power,
        hostile,
        hour_sweep,
        model_agent,
        newsroom_rps,
        oracle_meta_eval,
        overhead,
        poll_rate,
        real_pages,
        replay_bench,
        scale_out,
        scoring_throughput,
        warehouse_snapshot,
    )
}


def test_every_benchmark_is_found():
    assert set(SUMMARIES) <= set(SCRIPTS), "a benchmark checked here is gone from benchmarks/"


@pytest.mark.parametrize("name", SCRIPTS)
def test_benchmark_smoke(name: str):
    assert name in SUMMARIES, f"benchmarks/{name}.py: add the check of its summary to this file"
    if name == "real_pages" and not (DEVSET / "truth.jsonl").is_file():
        pytest.skip(f"the dev set of real pages is not at {DEVSET} (it lives beside the project)")
    if name == "model_agent":
        require_local_model()
    done = subprocess.run(
        [sys.executable, f"benchmarks/{name}.py", "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr[-3000:]}"
    SUMMARIES[name](done.stdout.rstrip("\n"))
