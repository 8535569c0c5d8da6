"""`newsbench report --demo`: real Dagster runs of one site on the embedded newsroom, a real
DuckDB warehouse, then the HTML report opened in real Chromium and compared with the
warehouse."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import duckdb
import pytest
from playwright.sync_api import sync_playwright
from typer.testing import CliRunner

from newsbench_dagster.cli import app
from newsbench_dagster.core.harness.browser import BrowserOptions
from tests.support.net import free_port

pytestmark = pytest.mark.heavy(45)

INSTANCE_YAML = "concurrency:\n  pools:\n    default_limit: 2\ntelemetry:\n  enabled: false\n"


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    home = tmp / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(INSTANCE_YAML)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DAGSTER_HOME", str(home))
        args = ["report", "--demo", "--site", "harbor", "--out", str(tmp / "out")]
        args += ["--warehouse", str(tmp / "wh.duckdb"), "--artifacts", str(tmp / "art")]
        result = CliRunner().invoke(app, [*args, "--port", str(free_port())])
    assert result.exit_code == 0, result.output
    return tmp, result


def _scores(db, where: str = "TRUE") -> dict[str, dict]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            f"SELECT run_id, verdicts, failure_class FROM newsbench.run_scores WHERE {where}"
        ).fetchall()
    return {r: {"verdicts": json.loads(v) if v else None, "class": c} for r, v, c in rows}


def test_the_report_opens_clean_and_its_run_pages_show_the_warehouse_verdicts(demo_report):
    tmp, result = demo_report
    index = tmp / "out" / "index.html"
    assert result.output.strip().splitlines()[-1] == index.resolve().as_uri()
    scores = _scores(tmp / "wh.duckdb")
    assert len(scores) >= 10
    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(**BrowserOptions().launch_kwargs())
        page = browser.new_page()
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
        page.goto(index.as_uri())
        assert page.locator("figure.plot svg").count() >= 1
        assert "harbor" in page.locator("h1").inner_text()
        # Follow the link of a run (the last of the runs table) to its page.
        link = page.locator("#runs + table a").last
        run_id = link.inner_text()
        link.click()
        page.wait_for_url(f"**/runs/{run_id}.html")
        shown = {
            cell.get_attribute("data-verdict"): cell.inner_text()
            for cell in page.locator("td[data-verdict]").all()
        }
        failure_class = page.locator("#failure-class").inner_text()
        has_shot = page.locator("img.shot").count()
        browser.close()
    assert not problems, problems
    stored = scores[run_id]
    assert shown == stored["verdicts"], (run_id, shown, stored)
    assert failure_class == stored["class"]
    assert has_shot == 1  # the screenshot is inlined, not linked
    # The same report, in the Dagster run: the daily_report asset put it in the artifact store.
    assert list((tmp / "art" / "reports").glob("*/index.html"))


def test_a_day_without_runs_is_an_error_that_names_what_there_is(demo_report):
    tmp, _ = demo_report
    result = CliRunner().invoke(
        app, ["report", "--day", "2026-11-02", "--warehouse", str(tmp / "wh.duckdb")]
    )
    assert result.exit_code == 1
    assert "no scored runs for 2026-11-02" in result.output
    assert "harbor" in result.output  # the sites that do have runs


def test_an_unknown_site_or_a_bad_day_is_named():
    runner = CliRunner()
    bad_site = runner.invoke(app, ["report", "--site", "atlantis"])
    bad_day = runner.invoke(app, ["report", "--day", "tomorrow"])
    assert bad_site.exit_code == 2 and "'atlantis' is not on the allowlist" in bad_site.output
    assert bad_day.exit_code == 2 and "'tomorrow' is not a date" in bad_day.output


def test_today_is_the_default_day(demo_report):
    tmp, result = demo_report
    assert (tmp / "out").is_dir()
    assert datetime.now(UTC).date().isoformat() in (tmp / "out" / "index.html").read_text()
