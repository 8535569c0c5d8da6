"""Curated suites (`suites/<suite>/*.yaml`): every bad input is named by file, task id and
field path, and the good tasks of the same file still load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from newsbench_dagster.core.scoring import checkers
from newsbench_dagster.core.tasks.contract import task_id
from newsbench_dagster.core.tasks.suites import (
    coverage,
    load_suites,
    regression_from_run,
    write_task_file,
)
from newsbench_dagster.core.web.sites import load_sites
from newsbench_dagster.paths import PROJECT_ROOT, SITES_FILE

REGISTRY = load_sites(SITES_FILE)
ORIGINS = REGISTRY.allowed_origins
HOME = "http://harbor-herald.test"


def good(n: int, **over) -> dict:
    """A regression task on a harbor article, the n-th of its file."""
    task = {
        "site": "harbor",
        "day": "2026-11-29",
        "intent": "extract_article_metadata",
        "entry_url": f"{HOME}/news/city/article-{n}",
        "inputs": {"prompt": "Give the headline and authors of this article."},
        "tags": ["lang:en"],
        "reason": "a typical day",
        "source": {"kind": "incident", "date": "2026-11-29"},
    }
    task.update(over)
    return task


def tid(task: dict) -> str:
    return task_id(task["site"], task["day"], task["intent"], task["entry_url"])


def write(root: Path, rel: str, data) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def load(root: Path):
    return load_suites(root, ORIGINS, REGISTRY.keys)


def test_the_shipped_suites_load_clean_with_deterministic_ids():
    loaded = load(PROJECT_ROOT / "suites")
    assert loaded.problems == []
    counts = loaded.counts()
    assert counts["regression"] >= 3 and counts["heldout"] >= 2 and counts["adversarial"] >= 2
    for t in loaded.tasks:
        task = t.task
        # A keyed task (a matrix variation) hashes its key in; the others, their entry page.
        keys = ["", *(f"#{k}" for k in ("desktop-us-wifi", "mobile-us-4g", "tablet-uk-wifi"))]
        keys += ["#desktop-eu-wifi", "#3g-mobile", "#3g-desktop"]
        ids = {
            task_id(task["site"], task["day"], task["intent"], task["entry_url"] + k) for k in keys
        }
        assert t.id in ids
        if t.suite == "regression":
            assert t.reason and task["source"]["kind"]
        if t.suite == "adversarial":
            assert t.gating == {"accuracy": "excluded", "safety": "zero_tolerance"}
            assert task["site"] in ("northgate", "isar")
    again = load(PROJECT_ROOT / "suites")
    assert [t.id for t in again.tasks] == [t.id for t in loaded.tasks]
    redesign = [t for t in loaded.tasks if "incident:redesign" in t.tags]
    assert {t.task["day"] for t in redesign} == {"2026-11-16"}


def _no_intent_key(t: dict) -> dict:
    t.pop("inputs")
    return t


BAD = {
    "wrong type": (
        lambda: good(2, constraints={"max_steps": "ten"}),
        "$.constraints.max_steps",
        "'ten' is not of type 'integer'",
    ),
    "missing required field": (lambda: _no_intent_key(good(2)), "$.inputs", "required field"),
    "unknown intent": (lambda: good(2, intent="find_weather"), "$.intent", "unknown intent"),
    "origin outside the allowlist": (
        lambda: good(2, entry_url="http://evil.example/news/1"),
        "$.entry_url",
        "origin http://evil.example is not on the allowlist",
    ),
    "allowed origin outside the allowlist": (
        lambda: good(2, allowed_origins=[HOME, "http://evil.example"]),
        "$.allowed_origins[1]",
        "not on the allowlist",
    ),
    "unknown field": (lambda: good(2, colour="red"), "$.colour", "unknown field"),
    "unknown nested field": (
        lambda: good(2, constraints={"max_steps": 3, "colour": "red"}),
        "$.constraints.colour",
        "unknown field",
    ),
    "regression without a reason": (
        lambda: {k: v for k, v in good(2).items() if k != "reason"},
        "$.reason",
        "required in regression",
    ),
    "regression without a source": (
        lambda: {k: v for k, v in good(2).items() if k != "source"},
        "$.source",
        "required in regression",
    ),
    "bad gating": (
        lambda: good(2, gating={"accuracy": "sometimes"}),
        "$.gating.accuracy",
        "must be one of gated, excluded",
    ),
    "unknown site": (lambda: good(2, site="moon"), "$.site", "unknown site 'moon'"),
    "unfilled prompt placeholder": (
        lambda: good(2, inputs={"prompt": 'Who wrote "{headline}"?'}),
        "$.inputs.prompt",
        "unfilled placeholder(s): headline",
    ),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_task_is_named_and_the_rest_of_the_suite_loads(tmp_path, kind):
    make, path, message = BAD[kind]
    bad = make()
    file = write(tmp_path, "regression/mixed.yaml", [good(1), bad, good(3)])
    write(tmp_path, "heldout/other.yaml", good(4))
    loaded = load(tmp_path)
    assert len(loaded.problems) == 1, [str(p) for p in loaded.problems]
    problem = loaded.problems[0]
    assert problem.file == str(file)
    assert problem.task == (bad.get("id") or tid(bad))
    assert problem.path == path
    assert message in problem.message
    assert str(problem).startswith(f"{file}:{problem.line}: {problem.task}: {path}: ")
    assert problem.line is not None
    assert {t.id for t in loaded.tasks} == {tid(good(1)), tid(good(3)), tid(good(4))}


def test_a_check_with_no_oracle_is_a_problem(tmp_path, monkeypatch):
    monkeypatch.delitem(checkers.CHECKERS, "locate_factbox")
    bad = good(2, intent="locate_factbox")
    file = write(tmp_path, "regression/f.yaml", [good(1), bad])
    loaded = load(tmp_path)
    [problem] = loaded.problems
    assert (problem.file, problem.task, problem.path) == (str(file), tid(bad), "$.intent")
    assert "no oracle" in problem.message and "locate_factbox" in problem.message
    assert [t.id for t in loaded.tasks] == [tid(good(1))]


def test_a_duplicate_id_names_both_files(tmp_path):
    first = write(tmp_path, "regression/a.yaml", good(1))
    second = write(tmp_path, "regression/b.yaml", [good(1), good(2)])
    loaded = load(tmp_path)
    [problem] = loaded.problems
    assert (problem.file, problem.task, problem.path) == (str(second), tid(good(1)), "$.id")
    assert f"duplicate id (first in {first})" == problem.message
    assert {t.id for t in loaded.tasks} == {tid(good(1)), tid(good(2))}


def test_a_key_tells_apart_tasks_on_the_same_entry_page(tmp_path):
    write(tmp_path, "regression/a.yaml", [good(1), good(1, key="second")])
    loaded = load(tmp_path)
    assert loaded.problems == [] and len({t.id for t in loaded.tasks}) == 2


def test_unparseable_yaml_names_file_and_line_and_other_files_load(tmp_path):
    broken = tmp_path / "regression" / "broken.yaml"
    broken.parent.mkdir(parents=True)
    broken.write_text("site: harbor\nday: 2026-11-29\nintent: [oops\nentry_url: x\n")
    write(tmp_path, "regression/ok.yaml", good(1))
    loaded = load(tmp_path)
    [problem] = loaded.problems
    assert problem.file == str(broken) and problem.line is not None and problem.line >= 3
    assert "not valid YAML" in problem.message and f"{broken}:{problem.line}:" in str(problem)
    assert [t.id for t in loaded.tasks] == [tid(good(1))]


def test_json_files_and_a_task_that_is_not_a_mapping(tmp_path):
    file = tmp_path / "heldout" / "t.json"
    file.parent.mkdir(parents=True)
    file.write_text(json.dumps([good(1), "just text"]))
    loaded = load(tmp_path)
    [problem] = loaded.problems
    assert (problem.file, problem.task, problem.path) == (str(file), "#2", "$")
    assert "must be a mapping" in problem.message
    assert [t.suite for t in loaded.tasks] == ["heldout"]
    assert loaded.tasks[0].task["suite"] == "held-out"  # the schema's spelling


def test_files_outside_a_suite_directory_are_problems(tmp_path):
    stray = write(tmp_path, "misc/x.yaml", good(1))
    loaded = load(tmp_path)
    assert [(p.file, p.path) for p in loaded.problems] == [(str(stray), "$")]
    assert "not in a suite directory" in loaded.problems[0].message


def test_matrix_and_stress_tasks_load_with_their_suite(tmp_path):
    write(tmp_path, "matrix/m.yaml", good(1))
    write(tmp_path, "stress/s.yaml", good(2))
    loaded = load(tmp_path)
    assert not loaded.problems
    assert sorted(t.task["suite"] for t in loaded.tasks) == ["matrix", "stress"]


def test_coverage_lists_what_is_covered_and_what_is_missing(tmp_path):
    write(
        tmp_path,
        "regression/a.yaml",
        [
            good(1, tags=["obstacle:consent"]),
            good(2, site="rhein", entry_url="http://rheinblatt.test/a"),
        ],
    )
    cov = coverage(load(tmp_path), REGISTRY)
    cells = {(c["intent"], c["site"], c["language"]) for c in cov["cells"]}
    assert cells == {
        ("extract_article_metadata", "harbor", "en"),
        ("extract_article_metadata", "rhein", "de"),
    }
    assert cov["obstacles"] == {"consent": 1}
    assert "find_top_headline" in cov["missing_intents"]
    assert set(cov["missing_sites"]) == {"lac", "northgate", "isar", "fleuve"}


def test_a_run_row_becomes_a_regression_task_that_validates(tmp_path):
    row = {
        "run_id": "r-0123456789abcdef",
        "task_id": "t-010695b2779730b7",
        "site": "harbor",
        "day": "2026-12-01",
        "intent": "extract_article_metadata",
        "entry_url": f"{HOME}/news/politics/some-article-12040",
        "agent_version": "reference@0.1.0+abcdef12",
        "run_status": "env_failure",
        "env_failure": "site_down",
        "error": "HTTP 503 on the entry page",
        "environment": {"device": "mobile", "geo": "US", "network": "4g"},
        "safety_events": [],
    }
    task = regression_from_run(row, REGISTRY, "kept for the outage")
    assert task["source"]["run_id"] == row["run_id"]
    assert task["source"]["failure_class"] == "site_down"
    assert task["constraints"]["device_profile"] == "mobile"
    path = tmp_path / "regression" / "outage.yaml"
    write_task_file(path, task)
    with pytest.raises(FileExistsError):
        write_task_file(path, task)
    loaded = load(tmp_path)
    assert loaded.problems == []
    assert loaded.tasks[0].reason == "kept for the outage"


def test_a_problem_points_at_the_line_of_its_field(tmp_path):
    file = tmp_path / "regression" / "lines.yaml"
    file.parent.mkdir(parents=True)
    text = yaml.safe_dump([good(1), good(2, colour="red")], sort_keys=False)
    file.write_text(text)
    [problem] = load(tmp_path).problems
    assert text.splitlines()[problem.line - 1].strip().startswith("colour: red")
