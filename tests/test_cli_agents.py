"""`newsbench agents list` and `newsbench agents try`: the manifests and one agent through the
harness from the shell, against a real newsroom on its own port."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from newsbench_dagster.cli import app
from newsbench_dagster.core.agents import load_manifests
from newsbench_dagster.paths import AGENTS_DIR


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
            "8493",
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
