"""Project-level guarantees: Dagster loads the definitions, the layers stay apart, the
schedule asks for one run per site, the CLI debugs feeds."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from dagster import AssetKey, instance_for_test
from typer.testing import CliRunner

from newsbench_dagster.cli import app
from newsbench_dagster.core.web.sites import load_sites
from newsbench_dagster.definitions import defs, production
from newsbench_dagster.defs.evaluation.jobs import nightly_sweep
from newsbench_dagster.defs.partitions import SITE_KEYS
from newsbench_dagster.paths import PROJECT_ROOT, SITES_FILE
from tests.support.evaluate import schedule_tick

CORE = PROJECT_ROOT / "newsbench_dagster" / "core"
NEWSROOM = PROJECT_ROOT / "newsbench_dagster" / "newsroom"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_core_and_newsroom_never_import_dagster():
    for folder in (CORE, NEWSROOM):
        for path in folder.rglob("*.py"):
            bad = {m for m in _imports(path) if m == "dagster" or m.startswith("dagster")}
            assert not bad, f"{path.relative_to(PROJECT_ROOT)} imports {bad}"
    # ...and core does not know the newsroom exists.
    for path in CORE.rglob("*.py"):
        assert not any("newsroom" in m for m in _imports(path)), path


def test_dagster_definitions_validate():
    env = {**os.environ, "DAGSTER_HOME": ""}
    env.pop("DAGSTER_HOME")
    out = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-w", "workspace.yaml"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Validation successful" in out.stdout + out.stderr


def test_graph_shape_and_partitions():
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == {
        "feed_items",
        "news_tasks",
        "agent_runs",
        "run_scores",
        "site_drift",
        "kpi_daily",
        "daily_report",
        "candidate_runs",
        "candidate_scores",
        "release_decision",
    }
    # Site partitions are the allowlist's keys, in its order.
    assert [s.key for s in load_sites(SITES_FILE).sites] == SITE_KEYS
    assert SITE_KEYS[:3] == ["harbor", "rhein", "lac"] and len(SITE_KEYS) == 6
    assert {c.name for c in defs.resolve_asset_graph().asset_check_keys} == {
        "compliance",
        "agent_manifests",
        "run_scores_quality",
        "kpi_daily_quality",
        "drift",
        "regression_gate",
        "compliance_gate",
    }
    # A day's rollup and report follow its scores by a sensor that is on by default.
    from dagster import DefaultSensorStatus

    sensor = defs.get_sensor_def("kpis_follow_scores")
    assert sensor.default_status == DefaultSensorStatus.RUNNING
    for key in ("kpi_daily", "daily_report"):
        assert graph.get(AssetKey(key)).automation_condition.get_label() == (
            "follows its day's scores"
        )
    # Candidates are partitioned by agent version (dynamic); sites and days stay static.
    assert graph.get(AssetKey("release_decision")).partitions_def.name == "agent_version"
    # The production variant builds too (BigQuery cannot run here; only its wiring is checked).
    prod = production()
    assert type(prod.resources["io_manager"]).__name__ == "BigQueryWarehouse"


def test_nightly_schedule_requests_one_run_per_site():
    with instance_for_test() as instance:
        requests = schedule_tick(
            nightly_sweep,
            instance=instance,
            scheduled_execution_time=datetime(2026, 11, 30, 22, tzinfo=UTC),
        )
    assert [r.partition_key for r in requests] == [f"2026-11-30|{s}" for s in SITE_KEYS]
    assert len({r.run_key for r in requests}) == len(SITE_KEYS)


def test_hourly_canary_rotates_through_every_site():
    from newsbench_dagster.defs.evaluation.jobs import CANARY_SITES_PER_HOUR, hourly_canary

    seen: list[str] = []
    hours = len(SITE_KEYS) // CANARY_SITES_PER_HOUR
    with instance_for_test() as instance:
        for h in range(hours):
            requests = schedule_tick(
                hourly_canary,
                instance=instance,
                scheduled_execution_time=datetime(2026, 11, 30, h, 30, tzinfo=UTC),
            )
            assert len(requests) == CANARY_SITES_PER_HOUR
            assert all(r.tags["newsbench/trigger"] == "canary" for r in requests)
            seen += [r.partition_key.split("|")[1] for r in requests]
    assert sorted(seen) == sorted(SITE_KEYS)  # every site once per rotation


def test_feeds_inspect_prints_json_lines(newsroom, tmp_path):
    import httpx

    feed = httpx.get("http://lac-matin.test/rss/une.xml", proxy=newsroom.address).content
    path = tmp_path / "une.xml"
    path.write_bytes(feed)
    result = CliRunner().invoke(app, ["feeds", "inspect", str(path), "--json"])
    assert result.exit_code == 0, result.output
    items = [json.loads(line) for line in result.stdout.splitlines()]
    truth = newsroom.newsroom.site("lac").stories(newsroom.now(), limit=20)
    assert [i["title"] for i in items] == [s.headline for s in truth]
    assert all(set(i) == {"title", "url", "published", "language", "role"} for i in items)
    assert items[0]["language"] == "fr" and items[0]["url"].startswith("http://lac-matin.test/")

    # A URL works too (through the newsroom proxy), sitemaps included.
    result = CliRunner().invoke(
        app,
        [
            "feeds",
            "inspect",
            "http://lac-matin.test/sitemap-news.xml",
            "--json",
            "--proxy",
            newsroom.address,
        ],
    )
    assert result.exit_code == 0 and len(result.stdout.splitlines()) >= 1


def test_feeds_inspect_names_the_bad_input(tmp_path):
    bad = tmp_path / "broken.xml"
    bad.write_text("<rss><channel><item><title>half</title></item><item><title>cu")
    result = CliRunner().invoke(app, ["feeds", "inspect", str(bad), "--json"])
    # Salvaged items are printed (the producer keeps them); the status says it was malformed.
    assert result.exit_code == 2 and "broken.xml" in result.stderr
    assert json.loads(result.stdout.splitlines()[0])["title"] == "half"
    bad.write_text("this is not a feed at all")
    result = CliRunner().invoke(app, ["feeds", "inspect", str(bad), "--json"])
    assert result.exit_code == 1 and "broken.xml" in result.stderr and not result.stdout
    result = CliRunner().invoke(app, ["feeds", "inspect", str(tmp_path / "missing.xml")])
    assert result.exit_code != 0 and "missing.xml" in result.stderr


def test_newsroom_commands_show_sites_truth_and_variants():
    runner = CliRunner()
    out = runner.invoke(app, ["newsroom", "sites", "--at", "2026-11-30T15:00:00Z"])
    assert out.exit_code == 0 and "northgate" in out.stdout and "magazine" in out.stdout
    out = runner.invoke(app, ["newsroom", "truth", "rhein", "--at", "2026-11-30T15:00:00Z"])
    assert out.exit_code == 0
    doc = json.loads(out.stdout)
    assert doc["site"] == "rhein" and doc["template_version"] == 2 and doc["lead"]["url"]
    page = runner.invoke(app, ["newsroom", "generate", "harbor", "newsletter", "--seed", "3"])
    again = runner.invoke(app, ["newsroom", "generate", "harbor", "newsletter", "--seed", "3"])
    other = runner.invoke(app, ["newsroom", "generate", "harbor", "newsletter", "--seed", "4"])
    assert page.exit_code == 0 and "<form" in page.stdout
    assert page.stdout == again.stdout != other.stdout
    # Bad input names what was wrong and exits 2.
    for argv, needle in (
        (["newsroom", "truth", "nope"], "unknown site 'nope'"),
        (["newsroom", "truth", "harbor", "--at", "soon"], "'soon' is not an ISO 8601"),
        (["newsroom", "generate", "harbor", "checkout", "--seed", "1"], "unknown page"),
    ):
        out = runner.invoke(app, argv)
        assert out.exit_code == 2 and needle in out.output.replace("\n", ""), argv
