"""Error clusters, the whose-fault split and the UI's Markdown tables, on rows shaped like the
warehouse's."""

from __future__ import annotations

from newsbench_dagster.core.report import charts
from newsbench_dagster.core.report.clusters import cluster, signature
from newsbench_dagster.core.report.markdown import classes_by_intent, runs_table


def _score(run_id, cls, site="harbor", intent="find_top_headline", reason=None):
    return {
        "run_id": run_id,
        "failure_class": cls,
        "site": site,
        "intent": intent,
        "agent_version": "a@1",
        "checker": {"reason": reason} if reason else {},
    }


def test_messages_that_differ_only_in_their_variable_parts_share_a_signature():
    a = signature("Timeout 30000ms exceeded waiting for http://harbor-herald.test/news/a-1")
    b = signature("Timeout 45000ms exceeded waiting for http://lac.test/x?id=9\nstack...")
    c = signature("net::ERR_CONNECTION_REFUSED at http://harbor-herald.test/")
    assert a == b == "Timeout <N>ms exceeded waiting for <URL>"
    assert c != a
    assert signature(None) == "(no message)"
    assert signature("found 'Old headline' at r-12c3623f6d7ccb2a") == "found <STR> at <ID>"


def test_clusters_group_by_class_and_signature_largest_first_with_examples():
    runs = {
        f"r{i}": {"error": f"Timeout {1000 + i}ms exceeded waiting for http://x.test/{i}"}
        for i in range(4)
    }
    scores = [_score(f"r{i}", "navigation_timeout") for i in range(4)]
    scores += [
        _score("w1", "wrong_target", reason="answered 'A' but the page shows 'B'"),
        _score("w2", "wrong_target", reason="answered 'C' but the page shows 'D'"),
        _score("p1", "perception", reason="answered 'C' but the page shows 'D'"),
        _score("ok", "success"),
    ]
    found = cluster(scores, runs, charts.kind_of, examples=3)
    assert [(c.failure_class, c.size, c.kind) for c in found] == [
        ("navigation_timeout", 4, "environment"),
        ("wrong_target", 2, "agent"),
        ("perception", 1, "agent"),
    ]
    assert len(found[0].examples) == 3 and found[0].examples[0]["run_id"] == "r0"
    assert found[1].signature == "answered <STR> but the page shows <STR>"
    assert all("ok" not in c.run_ids for c in found)  # successes are not clusters


def test_whose_fault_a_class_is():
    assert charts.kind_of("success") == "success"
    assert charts.kind_of("site_down") == "environment"
    assert charts.kind_of("no_answer_at_run") == "void"
    assert charts.kind_of("wrong_target") == "agent"


def test_the_taxonomy_chart_splits_agent_from_environment_and_renders():
    scores = [_score("a", "site_down"), _score("b", "wrong_target"), _score("c", "success")]
    chart = charts.failure_taxonomy(scores, "site")
    values = chart.to_dict()["datasets"]
    rows = next(iter(values.values()))
    assert sorted((r["class"], r["kind"]) for r in rows) == [
        ("site_down", "environment"),
        ("wrong_target", "agent"),
    ]
    assert charts.svg(chart).lstrip().startswith("<svg")
    assert charts.failure_taxonomy([_score("c", "success")], "site") is None  # nothing to plot
    image = charts.markdown_image(chart, "failures")
    assert image.startswith("![failures](data:image/png;base64,iVBOR")  # a PNG


def test_the_ui_tables_link_artifacts_and_count_classes_per_intent():
    runs = [
        {
            "run_id": "r-1",
            "intent": "find_top_headline",
            "agent_version": "a@1",
            "trial": 0,
            "run_status": "answered",
            "env_failure": None,
            "steps": 3,
            "artifacts": {"trace": "file:///tmp/a/trace.zip", "screenshot": "file:///tmp/a/f.png"},
        }
    ]
    table = runs_table(runs)
    assert "[trace](file:///tmp/a/trace.zip)" in table and "`r-1`" in table
    counts = classes_by_intent(
        [_score("a", "success"), _score("b", "site_down"), _score("c", "success", intent="x")]
    )
    assert "| find_top_headline | 2 | 1 | 1 |" in counts
    assert "site_down (environment)" in counts
