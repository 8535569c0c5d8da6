"""`newsbench agents list` and `newsbench agents try`: the manifests and one agent through the
harness from the shell, against a real newsroom on its own port."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from newsbench_dagster.cli import app
from newsbench_dagster.core.agents.protocol import load_manifests
from newsbench_dagster.paths import AGENTS_DIR
from tests.support.net import free_port

# Agents tried from the shell in real Chromium, ten times: about 40 s on two busy cores.
pytestmark = pytest.mark.heavy(40)


def test_agents_list_shows_every_manifest_with_its_content_hashed_version():
    result = CliRunner().invoke(app, ["agents", "list"])
    assert result.exit_code == 0, result.output
    for m in load_manifests(AGENTS_DIR):
        assert m.agent_version in result.stdout


def test_agents_list_names_a_broken_manifest(tmp_path):
    (tmp_path / "bad.yaml").write_text("name: Bad Name\nversion: 1\nadapter: reference\n")
    result = CliRunner().invoke(app, ["agents", "list", "--directory", str(tmp_path)])
    assert result.exit_code == 1
    assert "bad.yaml" in result.output and "name" in result.output


def test_agents_try_runs_and_scores_an_agent(tmp_path):
    port = free_port()
    result = CliRunner().invoke(
        app,
        [
            "agents",
            "try",
            str(AGENTS_DIR / "reference.yaml"),
            "--site",
            "harbor",
            "--intent",
            "find_top_headline",
            "--intent",
            "extract_article_metadata",
            "--tasks",
            "2",
            "--artifacts",
            str(tmp_path),
            "--port",
            str(port),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "2/2 scored runs passed" in result.output
    runs = list(tmp_path.glob("runs/harbor/*/*/run.json"))
    assert len(runs) == 2
    assert {json.loads(p.read_text())["intent"] for p in runs} == {
        "find_top_headline",
        "extract_article_metadata",
    }


def test_agents_try_rejects_an_unknown_intent():
    result = CliRunner().invoke(
        app, ["agents", "try", str(AGENTS_DIR / "reference.yaml"), "--intent", "book_a_flight"]
    )
    assert result.exit_code == 2 and "book_a_flight" in result.output


def test_agents_try_runs_a_seeded_sample_and_stores_it_with_every_run(tmp_path):
    port = free_port()
    args = [
        "agents", "try", str(AGENTS_DIR / "reference.yaml"), "--site", "harbor", "--site", "rhein",
        "--intent", "find_top_headline", "--intent", "extract_article_metadata",
        "--tasks", "6", "--sample", "3", "--seed", "11", "--artifacts", str(tmp_path),
        "--port", str(port),
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    runs = [json.loads(p.read_text()) for p in tmp_path.glob("runs/*/*/*/run.json")]
    assert len(runs) == 3
    sets = [r["environment"]["task_set"] for r in runs]
    assert all(s == sets[0] for s in sets)
    assert sets[0]["kind"] == "sample" and sets[0]["seed"] == 11
    assert sorted(sets[0]["task_ids"]) == sorted(r["task_id"] for r in runs)
    assert {r["site"] for r in runs} == {"harbor", "rhein"}  # stratified: both sites drawn


# rhein's live blog opens at 05:00 UTC on 2026-12-01 (06:00 in Berlin) with only its pinned
# post; its first entry is up within a quarter of an hour.
OPENING = "2026-12-01T05:00:00Z"


def _try_live_blog(port: int, at: str, artifacts) -> object:
    return CliRunner().invoke(
        app,
        [
            "agents", "try", str(AGENTS_DIR / "reference.yaml"), "--site", "rhein",
            "--intent", "live_blog_latest", "--at", at, "--artifacts", str(artifacts),
            "--port", str(port),
        ],
    )  # fmt: skip


def test_agents_try_at_an_instant_reproduces_that_hour(tmp_path):
    port = free_port()
    opening = _try_live_blog(port, OPENING, tmp_path / "opening")
    # No entry yet: no task is made, so no agent can be failed for it.
    assert opening.exit_code == 1 and "no tasks" in opening.output, opening.output
    assert "clock frozen at 2026-12-01T05:00:00+00:00" in opening.output
    later = _try_live_blog(port, "2026-12-01T05:30:00Z", tmp_path / "later")
    assert later.exit_code == 0 and "1/1 scored runs passed" in later.output, later.output
    (run,) = [json.loads(p.read_text()) for p in (tmp_path / "later").glob("runs/*/*/*/run.json")]
    assert run["day"].startswith("2026-12-01") and run["intent"] == "live_blog_latest"
    assert run["environment"]["world"]["frozen_at"] == "2026-12-01T05:30:00+00:00"


def test_agents_try_at_refuses_a_newsroom_frozen_elsewhere(newsroom_server, tmp_path):
    result = _try_live_blog(newsroom_server.port, OPENING, tmp_path)
    assert result.exit_code == 2, result.output
    assert "on real time" in result.output and "2026-12-01T05:00:00+00:00" in result.output
    bad = _try_live_blog(free_port(), "half past five", tmp_path)
    assert bad.exit_code == 2 and "'half past five'" in bad.output


def test_agents_try_says_loudly_when_no_run_was_scored(tmp_path, monkeypatch):
    """Every run excluded (the model's endpoint is not there): the summary says so, with the
    reason, and the command fails; it printed `0/0 scored runs passed` and exited 0."""
    monkeypatch.setenv("NEWSBENCH_TEST_KEY", "k")
    manifest = tmp_path / "gone.yaml"
    manifest.write_text(
        "name: gone\nversion: '1'\nadapter: openai_tools\nmodel: m\n"
        f"params: {{base_url: 'http://127.0.0.1:{free_port()}/v1', "
        "api_key_env: NEWSBENCH_TEST_KEY, retries: 0}\n"
    )
    result = CliRunner().invoke(
        app,
        ["agents", "try", str(manifest), "--site", "harbor", "--intent", "find_top_headline",
         "--tasks", "1", "--artifacts", str(tmp_path / "a"), "--port", str(free_port())],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "no run was scored: all 1 excluded (model_unavailable 1)" in result.output
    assert "0/0 scored runs passed" not in result.output


def test_agents_list_fills_the_prompt_hash_or_says_why_there_is_none(tmp_path):
    """The prompt hash column was empty for every manifest: it shows the hash the release
    decision records (`AgentManifest.prompt_hash`), or "-" and why."""
    (tmp_path / "prompted.yaml").write_text(
        "name: prompted\nversion: '1'\nadapter: openai_tools\nmodel: m\n"
        "prompt: Read the page before you answer.\n"
    )
    (tmp_path / "default.yaml").write_text(
        "name: default\nversion: '1'\nadapter: openai_tools\nmodel: m\n"
    )
    (tmp_path / "plain.yaml").write_text("name: plain\nversion: '1'\nadapter: reference\n")
    result = CliRunner().invoke(app, ["agents", "list", "--directory", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if "@1+" in line]
    rows = {line.split("│")[1].strip(): line for line in lines}
    by_name = {m.name: m for m in load_manifests(tmp_path)}
    prompted = by_name["prompted"]
    assert prompted.prompt_hash and prompted.prompt_hash in rows[prompted.agent_version]
    assert "- (adapter's default)" in rows[by_name["default"].agent_version]
    assert "- (no model, no prompt)" in rows[by_name["plain"].agent_version]


# harbor's classic template went to version 2 on 2026-11-16 (New York): the selector baseline,
# learned on version 1, scores only before it.
BEFORE_REDESIGN = "2026-11-15T15:00:00Z"


def test_agents_try_at_an_instant_before_the_redesign_passes_the_selector_baseline(
    tmp_path, monkeypatch
):
    """The README's walkthrough: `agents try` with --at runs against the newsroom frozen
    before harbor's redesign, where the selector baseline scores. On a narrow terminal each
    run's artifact folder is still printed whole (the table cut it); each run.json lists the
    run's artifacts (it said null) and console.json is there (it was written only on errors)."""
    from newsbench_dagster.cli.common import console

    monkeypatch.setattr(console, "width", 60)
    art = tmp_path / "a-rather-long-artifact-folder-name-so-that-no-cell-could-hold-it"
    result = CliRunner().invoke(
        app,
        [
            "agents", "try", str(AGENTS_DIR / "selector-baseline.yaml"), "--site", "harbor",
            "--intent", "find_top_headline", "--intent", "extract_article_metadata",
            "--tasks", "2", "--at", BEFORE_REDESIGN, "--artifacts", str(art),
            "--port", str(free_port()),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "clock frozen at 2026-11-15T15:00:00+00:00" in result.output
    assert "2/2 scored runs passed" in result.output
    folders = sorted(p.parent for p in art.glob("runs/harbor/*/*/run.json"))
    assert len(folders) == 2
    lines = result.stdout.splitlines()
    for folder in folders:
        assert f"  {folder}" in lines, result.stdout  # whole, on a line of its own
        run = json.loads((folder / "run.json").read_text())
        assert run["day"].startswith("2026-11-15")
        assert run["environment"]["world"]["frozen_at"] == "2026-11-15T15:00:00+00:00"
        kinds = run["artifacts"]
        assert {"run", "screenshot", "har", "console", "a11y", "trace"} <= set(kinds), kinds
        assert kinds["run"] == (folder / "run.json").as_uri()
        assert kinds["console"] == (folder / "console.json").as_uri()
        # The frozen pages log nothing: the file says so with an empty list.
        assert json.loads((folder / "console.json").read_text()) == run["console_errors"] == []


def test_agents_try_says_why_a_run_failed_and_keeps_the_judgement_beside_the_run(tmp_path):
    """An agent that answers one intent wrong on purpose (the reference's `wrong_intent`):
    the table's "why" names the checker's reason and the checks that failed; every run's
    `judgement.json` beside its `run.json` holds the verdict, the reason and what each check
    compared (issue 49)."""
    manifest = tmp_path / "wrong.yaml"
    manifest.write_text(
        "name: wrong-lead\nversion: 0.1.0\nadapter: reference\n"
        "params: {wrong_intent: find_top_headline, wrong_share: 1.0}\n"
    )
    artifacts = tmp_path / "artifacts"
    result = CliRunner().invoke(
        app,
        [
            *("agents", "try", str(manifest), "--site", "harbor"),
            *("--intent", "find_top_headline", "--intent", "extract_article_metadata"),
            *("--tasks", "2", "--artifacts", str(artifacts), "--port", str(free_port())),
        ],
    )
    assert result.exit_code == 0, result.output
    judged = {}
    for run in artifacts.glob("runs/harbor/*/*/run.json"):
        judged[json.loads(run.read_text())["intent"]] = json.loads(
            (run.parent / "judgement.json").read_text()
        )
    assert set(judged) == {"find_top_headline", "extract_article_metadata"}
    wrong, right = judged["find_top_headline"], judged["extract_article_metadata"]
    assert (wrong["verdict"], right["verdict"]) == ("fail", "pass")
    failed = [name for name, check in wrong["checks"].items() if check["passed"] is False]
    assert failed and wrong["why"].endswith(f"(failed: {', '.join(failed)})")
    assert right["why"] == "" and all(c["passed"] for c in right["checks"].values())
    # The table says it too, on the failed run's line.
    line = next(x for x in result.stdout.splitlines() if "find_top_headline" in x)
    assert "│ fail " in line and wrong["why"][:20] in line
