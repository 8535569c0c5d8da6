"""`newsbench gate`: any CI system's release gate. It runs candidate and baseline on the same
tasks against a real newsroom in Chromium, prints the decision and exits 0 pass, 1 block,
3 insufficient evidence, 2 bad input; or reads the decision the pipeline stored."""

from __future__ import annotations

import json
import re

import duckdb
import pytest
from typer.testing import CliRunner

from newsbench_dagster.cli import app
from newsbench_dagster.core.agents.protocol import load_manifest
from newsbench_dagster.core.analytics import tables
from newsbench_dagster.paths import AGENTS_DIR
from tests.support.net import free_port

pytestmark = pytest.mark.heavy(20)  # about 20 s on two busy cores

SELECTOR = str(AGENTS_DIR / "selector-baseline.yaml")


def _selector_gate(tmp_path, *options: str):
    """`gate --json` of the selector baseline against the reference on harbor, on a newsroom
    the command starts on a free port, artifacts in tmp_path."""
    args = ["gate", "--candidate", SELECTOR, "--baseline", "reference", "--site", "harbor"]
    args += ["--json", "--artifacts", str(tmp_path), "--port", str(free_port())]
    return CliRunner().invoke(app, [*args, *options])


def test_gate_blocks_the_selector_baseline_after_the_redesign_and_exits_1(tmp_path):
    result = _selector_gate(
        tmp_path,
        *("--intent", "find_top_headline", "--intent", "extract_article_metadata"),
        *("--heldout", "12", "--trials", "1", "--slice-min-tasks", "5"),
    )
    assert result.exit_code == 1, result.output
    decision = json.loads(result.stdout[result.stdout.index("{") :])
    assert decision["verdict"] == "block"
    assert any(r.startswith("site=harbor:") for r in decision["reasons"])
    ids = decision["task_set"]["task_ids"]
    assert decision["sample_counts"]["tasks_gated"] == len(ids) >= 5
    # The progress, stderr not being a terminal: whole lines, not a bar cut at 80 columns.
    shown = re.findall(
        r"^selector-baseline@0\.1\.0 vs reference@0\.1\.0 runs: (\d+)/(\d+) \(\d+s\)$",
        result.stderr,
        re.M,
    )
    done, total = map(int, shown[-1]) if shown else (0, -1)
    assert total == 2 * len(ids) <= done, result.stderr  # reruns of env failures add runs
    assert "…" not in result.stderr


def test_an_identical_candidate_is_never_blocked_and_each_look_draws_new_tasks(tmp_path):
    """A/A: the reference agent under another name against itself. The gate may pass or say
    insufficient evidence, never block; a look that is not decisive draws --heldout new
    held-out tasks, and the task set kept in the artifact store holds every look's tasks."""
    from newsbench_dagster.core.artifacts import LocalArtifactStore
    from newsbench_dagster.core.release.plan import task_set_key

    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "reference.yaml").write_text((AGENTS_DIR / "reference.yaml").read_text())
    (agents / "twin.yaml").write_text("name: twin\nversion: 0.1.0\nadapter: reference\n")
    args = [
        *("gate", "--candidate", "twin", "--baseline", "reference", "--agents", str(agents)),
        *("--site", "harbor", "--site", "northgate", "--intent", "extract_article_metadata"),
        *("--heldout", "2", "--max-looks", "2", "--trials", "1", "--slice-min-tasks", "5"),
        *("--json", "--artifacts", str(tmp_path / "a"), "--port", str(free_port())),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 3), result.output
    decision = json.loads(result.stdout[result.stdout.index("{") :])
    assert decision["verdict"] in ("pass", "insufficient_evidence")
    assert decision["overall"]["diff"]["diff"] == 0
    seq = decision["sequential"]
    assert seq["max_looks"] == 2 and seq["look"] == len(seq["history"]) >= 2, seq
    assert [h["look"] for h in seq["history"]] == list(range(1, seq["look"] + 1))
    assert all(h["verdict"] == "insufficient_evidence" for h in seq["history"][:-1])
    gated = [h["tasks_gated"] for h in seq["history"]]
    assert gated == sorted(gated) and len(set(gated)) == len(gated), gated  # more each look
    assert "look 2/2" in result.stderr

    key = task_set_key(decision["candidate_version"])
    saved = LocalArtifactStore(tmp_path / "a").read_json(key)
    later = [i for i, g in saved["gating"].items() if g.get("look", 1) > 1]
    assert len(later) == 2 * (seq["look"] - 1) or saved["ran_out"], saved["description"]
    assert saved["ran_out"] == (seq["stopped"] == "no tasks left")


def _store(db, verdict: str, baseline: str, candidate: str, at: str) -> None:
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE SCHEMA IF NOT EXISTS newsbench")
        con.execute(tables.ddl("release_decision", "newsbench"))
        df = tables.frame(  # noqa: F841 - read by the INSERT
            "release_decision",
            [
                {
                    "candidate_version": candidate,
                    "baseline_version": baseline,
                    "verdict": verdict,
                    "reasons": ["overall: candidate - baseline -0.2"],
                    "markdown": f"## {verdict.upper()} [kept]",
                    "decided_at": at,
                }
            ],
        )
        con.execute("INSERT INTO newsbench.release_decision BY NAME SELECT * FROM df")


def test_gate_reads_the_stored_decision_and_checks_the_baseline(tmp_path):
    cand = load_manifest(SELECTOR).agent_version
    base = load_manifest(AGENTS_DIR / "reference.yaml").agent_version
    db = tmp_path / "wh.duckdb"
    args = ["gate", "--candidate", SELECTOR, "--from-warehouse", "--database", str(db)]

    missing = CliRunner().invoke(app, args)
    assert missing.exit_code == 2 and "no warehouse" in missing.output

    _store(db, "insufficient_evidence", base, cand, "2026-12-01T10:00:00Z")
    stored = CliRunner().invoke(app, args)
    assert stored.exit_code == 3, stored.output
    assert "INSUFFICIENT_EVIDENCE [kept]" in stored.output  # printed as stored, brackets too

    # A newer decision, against another baseline: not the one asked about.
    _store(db, "pass", "someone-else@1+0", cand, "2026-12-01T11:00:00Z")
    other = CliRunner().invoke(app, args)
    assert other.exit_code == 2 and "someone-else@1+0" in other.output


def test_gate_refuses_bad_input_with_exit_2():
    same = CliRunner().invoke(app, ["gate", "--candidate", "reference", "--baseline", "reference"])
    assert same.exit_code == 2 and "same version" in same.output
    unknown = CliRunner().invoke(app, ["gate", "--candidate", "nobody"])
    assert unknown.exit_code == 2 and "'nobody'" in unknown.output
    late = ["gate", "--candidate", SELECTOR, "--baseline", "reference"]
    frozen = CliRunner().invoke(app, [*late, "--at", "noon"])
    assert frozen.exit_code == 2 and "--at 'noon' is not an ISO 8601 instant" in frozen.output
    stored = CliRunner().invoke(app, [*late, "--from-warehouse", "--at", "2026-11-30T12:00:00Z"])
    assert stored.exit_code == 2 and "--from-warehouse runs nothing" in stored.output


def test_gate_at_an_instant_runs_on_the_newsroom_frozen_there(tmp_path):
    """`gate --at`: the tasks are the instant's (its day's feeds), and every run's world is the
    newsroom frozen at that instant, whatever day the gate runs."""
    at = "2026-11-30T12:00:00Z"
    result = _selector_gate(
        tmp_path, "--intent", "find_top_headline", "--heldout", "3", "--max-looks", "1", "--at", at
    )
    assert result.exit_code in (0, 1, 3), result.output
    decision = json.loads(result.stdout[result.stdout.index("{") :])
    ids = decision["task_set"]["task_ids"]
    runs = [json.loads(p.read_text()) for p in tmp_path.rglob("run.json")]
    assert ids and len(runs) >= 2 * len(ids) and {r["task_id"] for r in runs} == set(ids)
    assert {r["day"] for r in runs} == {"2026-11-30"}
    assert {r["environment"]["world"]["frozen_at"] for r in runs} == {"2026-11-30T12:00:00+00:00"}
    # Every run's judgement is beside it: the verdict and, for a failure, why (issue 49).
    judged = [
        json.loads((p.parent / "judgement.json").read_text()) for p in tmp_path.rglob("run.json")
    ]
    assert {j["run_id"] for j in judged} == {r["run_id"] for r in runs}
    assert {j["verdict"] for j in judged} <= {"pass", "fail", "excluded"}
    assert all(j["why"] for j in judged if j["verdict"] != "pass")
