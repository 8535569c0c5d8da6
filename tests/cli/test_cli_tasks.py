"""`newsbench tasks ...`: the curated suites from the shell (schema, validate, list, coverage,
and a regression task scaffolded from a real recorded run)."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from newsbench_dagster.cli import app
from newsbench_dagster.core.agents.protocol import AgentManifest
from newsbench_dagster.core.artifacts import LocalArtifactStore
from newsbench_dagster.core.harness.runner import Runner, run_tasks
from newsbench_dagster.core.tasks.poll import poll_site
from newsbench_dagster.core.tasks.produce import make_tasks
from tests.support.paths import REPO
from tests.support.tasks import LEAD_AND_METADATA

SCHEMA = REPO / "newsbench_dagster/core/tasks/schemas/task.schema.json"


def invoke(*args: str):
    return CliRunner().invoke(app, ["tasks", *args])


def test_schema_prints_the_shipped_file():
    result = invoke("schema")
    assert result.exit_code == 0
    assert result.stdout == SCHEMA.read_text(encoding="utf-8")


def test_the_shipped_suites_validate_clean_with_counts_per_suite():
    result = invoke("validate")
    assert result.exit_code == 0, result.output
    for suite in ("regression", "heldout", "adversarial"):
        assert suite in result.stdout


def test_validate_prints_every_problem_and_exits_1(tmp_path):
    bad = tmp_path / "adversarial" / "bad.yaml"
    bad.parent.mkdir()
    bad.write_text(
        yaml.safe_dump(
            [
                {
                    "site": "northgate",
                    "day": "2026-11-29",
                    "intent": "extract_article_metadata",
                    "entry_url": "http://northgate-courier.test/artikel/1.html",
                    "inputs": {"prompt": "Who wrote this?"},
                },
                {
                    "site": "northgate",
                    "day": "2026-11-29",
                    "intent": "find_weather",
                    "entry_url": "http://evil.example/",
                    "inputs": {"prompt": "Weather?"},
                    "colour": "red",
                },
            ]
        )
    )
    result = invoke("validate", "--root", str(tmp_path))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 3, lines
    for path in ("$.intent", "$.entry_url", "$.colour"):
        assert any(str(bad) in line and f": {path}: " in line for line in lines), path
    assert all(": t-" in line for line in lines)  # each names the task's id
    assert "1 task(s) loaded" in result.stderr


def _listed(*args: str) -> list[dict]:
    result = invoke("list", "--json", *args)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_list_filters_by_suite_tag_and_intent():
    every = _listed()
    assert len(every) >= 7
    adversarial = _listed("--suite", "adversarial")
    assert adversarial and all(t["suite"] == "adversarial" for t in adversarial)
    assert {t["site"] for t in adversarial} == {"northgate", "isar"}
    assert all(t["gating"]["safety"] == "zero_tolerance" for t in adversarial)
    redesign = _listed("--tag", "incident:redesign")
    assert len(redesign) == 2 and all(t["site"] == "harbor" for t in redesign)
    live = _listed("--intent", "live_blog_latest")
    assert {t["site"] for t in live} == {"fleuve"}
    assert _listed("--suite", "heldout", "--intent", "find_top_headline") == []
    table = invoke("list", "--suite", "regression")
    assert table.exit_code == 0 and "harbor-herald.test" in table.stdout
    assert invoke("list", "--suite", "nope").exit_code == 2


def test_coverage_names_what_is_covered_and_what_is_not():
    result = invoke("coverage")
    assert result.exit_code == 0, result.output
    assert "extract_article_metadata" in result.stdout
    assert "intents with no task:" in result.stdout and "subscribe_checkout" in result.stdout
    assert "injection" in result.stdout  # obstacles from tags
    cov = json.loads(invoke("coverage", "--json").stdout)
    assert {"en", "de", "fr"} <= set(cov["languages"])
    assert "subscribe_checkout" in cov["missing_intents"]


class WrongAuthorAgent:
    """Reads the page's metadata, then answers a made-up author: a failed run to keep."""

    manifest = AgentManifest(name="wrong-author", version="1", adapter="reference")

    async def run(self, task, tools):
        md = await tools.get_metadata()
        await tools.answer(
            {
                "headline": md["title"],
                "authors": ["Nobody Inparticular"],
                "published": "2001-01-01T00:00:00Z",
            }
        )


def test_scaffold_turns_a_recorded_run_into_a_regression_task(
    tmp_path, registry, fetcher, robots, browser_options, today
):
    harbor = registry.get("harbor")
    rows = poll_site(harbor, fetcher, None, today)
    [task] = make_tasks(harbor, today, rows, 1, LEAD_AND_METADATA)[1:2]
    assert task["intent"] == "extract_article_metadata"
    artifacts = tmp_path / "artifacts"
    runner = Runner(
        [WrongAuthorAgent()],
        options=browser_options,
        robots=robots,
        store=LocalArtifactStore(artifacts),
    )
    [row] = run_tasks([task], today, runner)
    root = tmp_path / "suites"

    args = ["--artifacts", str(artifacts), "--root", str(root)]
    result = invoke("scaffold", "wrong-author", "--from-run", row["run_id"], *args)
    assert result.exit_code == 0, result.output
    written = yaml.safe_load((root / "regression" / "wrong-author.yaml").read_text())
    assert written["intent"] == task["intent"] and written["entry_url"] == task["entry_url"]
    assert written["inputs"]["prompt"] == task["inputs"]["prompt"]
    source = written["source"]
    assert source["run_id"] == row["run_id"] and source["task_id"] == task["id"]
    assert source["agent_version"] == row["agent_version"]
    assert source["failure_class"]  # the run failed: the class is recorded
    assert written["reason"]

    check = invoke("validate", "--root", str(root))
    assert check.exit_code == 0, check.output

    again = invoke("scaffold", "wrong-author", "--from-run", row["run_id"], *args)
    assert again.exit_code == 1 and "exists" in again.stderr
    missing = invoke("scaffold", "other", "--from-run", "r-0000000000000000", *args)
    assert missing.exit_code == 1 and "run r-0000000000000000 not found" in missing.stderr
    assert not (root / "regression" / "other.yaml").exists()


def test_scaffold_leaves_what_the_run_does_not_record_for_the_curator(tmp_path):
    # A run row as the runner writes it (runs/SITE/DAY/RUN_ID/run.json); run.json has no
    # inputs, and this intent's prompt names a headline the row does not carry.
    run_id = "r-00000000000000aa"
    folder = tmp_path / "artifacts" / "runs" / "harbor" / "2026-11-29" / run_id
    folder.mkdir(parents=True)
    row = {
        "run_id": run_id,
        "task_id": "t-00000000000000bb",
        "site": "harbor",
        "day": "2026-11-29",
        "intent": "find_author_and_time",
        "entry_url": "http://harbor-herald.test/",
        "agent_version": "reference@0.1.0+0000abcd",
        "trial": 0,
        "started_at": "2026-11-29 12:00:00.000000+00:00",
        "ended_at": "2026-11-29 12:00:09.000000+00:00",
        "run_status": "timeout",
        "env_failure": None,
        "error": "budget of 60s exhausted",
        "steps": 15,
        "answer": None,
        "answers": [],
        "observation": None,
        "safety_events": [],
        "environment": {"device": "desktop", "geo": "US", "network": "wifi"},
        "artifacts": None,
    }
    (folder / "run.json").write_text(json.dumps(row))
    root = tmp_path / "suites"
    args = ["--artifacts", str(tmp_path / "artifacts"), "--root", str(root)]
    result = invoke("scaffold", "who-wrote", "--from-run", run_id, "--reason", "timed out", *args)
    assert result.exit_code == 1
    assert "$.inputs.prompt: unfilled placeholder(s): headline" in result.stdout
    written = yaml.safe_load((root / "regression" / "who-wrote.yaml").read_text())
    assert written["reason"] == "timed out"
    assert written["source"]["error"] == "budget of 60s exhausted"
    assert written["source"]["failure_class"]


def test_pool_prints_the_days_tasks_and_the_reserve_per_site_and_whether_the_budget_fits():
    """`tasks pool`: the figures the gate's budget is planned on, for a frozen instant."""
    from tests.support.net import free_port

    at = ["--at", "2026-11-30T12:00:00Z", "--port", str(free_port())]
    result = invoke("pool", "--site", "harbor", "--site", "rhein", "--json", *at)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["day"] == "2026-11-30" and list(report["sites"]) == ["harbor", "rhein"]
    for counts in report["sites"].values():
        assert counts["daily"] == 17 and counts["reserve"] > 10 * counts["daily"]
        assert counts["pool"] == counts["daily"] + counts["reserve"]
    assert report["pool"] == sum(c["pool"] for c in report["sites"].values())
    assert sum(report["by_intent"].values()) == report["pool"]
    # Two sites' news is not the default budget's 1,200 held-out tasks: the output says so.
    assert report["pool"] < report["gate_budget"]["tasks"] == 1200
    assert report["looks_covered"] == report["pool"] // 100
    text = invoke("pool", "--site", "harbor", *at)
    assert text.exit_code == 0, text.output
    assert f"runs dry after look {report['sites']['harbor']['pool'] // 100}" in text.stdout
    bad = invoke("pool", "--site", "nowhere")
    assert bad.exit_code == 2 and "unknown site(s) nowhere" in bad.output
