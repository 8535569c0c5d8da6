"""Fuzzing the task and suite loader: whatever a suite file holds (arbitrary text, YAML-ish
text, the curated tasks of `suites/` mutated field by field, as YAML or JSON), `load_suite_file`
returns a `SuiteLoad`: tasks that are schema-valid, and problems that name the file. It never
raises. `validation_errors` (contract.py) returns a list of strings for any value."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from newsbench_dagster.core.tasks.contract import task_schema, validation_errors
from newsbench_dagster.core.tasks.suites import Problem, SuiteLoad, load_suite_file
from newsbench_dagster.core.web.sites import load_sites
from newsbench_dagster.paths import SITES_FILE, SUITES_DIR

# 400 examples a property over the suite loader: about 30 s on two busy cores.
pytestmark = pytest.mark.heavy(30)

ALLOWED = sorted(load_sites(SITES_FILE).allowed_origins)
SITE_KEYS = [s.key for s in load_sites(SITES_FILE).sites]
CURATED = [
    task
    for path in sorted(SUITES_DIR.rglob("*.yaml"))
    for doc in [yaml.safe_load(path.read_text(encoding="utf-8"))]
    for task in (doc if isinstance(doc, list) else [doc])
]
FIELDS = sorted({*task_schema()["properties"], "tags", "reason", "key", "gating"})
WORK = Path(tempfile.mkdtemp(prefix="fuzz-suites-"))
(WORK / "regression").mkdir()

NAMES = st.text(max_size=10)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(FIELDS) | NAMES, inner, max_size=4)
    ),
    max_leaves=12,
)
# Scalars YAML reads as something else than text, and markup that trips parsers.
YAML_SCALARS = [
    "2026-11-30",
    "2026-11-30T12:00:00Z",
    "~",
    "null",
    "yes",
    "0x1F",
    "1e400",
    ".nan",
    "-.inf",
    "'quoted'",
    '"esc\\u0041\\x00"',
    "!!binary aGVsbG8=",
    "!!str 5",
    "!!set {a, b}",
    "!!omap [a: 1]",
    "&anchor value",
    "*anchor",
    "[1, {a: b}]",
    "{",
    "[",
    "|",
    ">-",
    "http://harbor-herald.test/",
    "http://evil.test/",
    "{{placeholder}}",
    "\t",
    "? complex",
    "%YAML 1.1",
    "---",
    "...",
]


@st.composite
def yamlish(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        indent = " " * draw(st.sampled_from([0, 0, 2, 4]))
        dash = draw(st.sampled_from(["", "", "- "]))
        key = draw(st.sampled_from(FIELDS) | st.text(max_size=8))
        value = draw(st.sampled_from(YAML_SCALARS) | st.text(max_size=20))
        lines.append(f"{indent}{dash}{key}: {value}")
    return "\n".join(lines)


@st.composite
def mutated_tasks(draw):
    task = json.loads(json.dumps(draw(st.sampled_from(CURATED)), default=str))
    for _ in range(draw(st.integers(1, 4))):
        target = task
        if draw(st.booleans()):  # one level down, where there is one
            nested = [k for k, v in task.items() if isinstance(v, dict)]
            if nested:
                target = task[draw(st.sampled_from(sorted(nested)))]
        keys = sorted(target, key=str)
        op = draw(st.sampled_from(["drop", "set", "add", "retype"]))
        if op == "drop" and keys:
            del target[draw(st.sampled_from(keys))]
        elif op == "set" and keys:
            target[draw(st.sampled_from(keys))] = draw(JSON)
        elif op == "add":
            target[draw(st.sampled_from(FIELDS) | NAMES)] = draw(JSON)
        elif keys:
            key = draw(st.sampled_from(keys))
            target[key] = draw(st.sampled_from([[target[key]], str(target[key]), None, 0]))
    return draw(st.sampled_from([task, [task, task], [task, draw(JSON)]]))


def load_text(text: str, suffix: str = ".yaml") -> SuiteLoad:
    path = WORK / "regression" / f"fuzzed{suffix}"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return check_load(path)


def check_load(path: Path) -> SuiteLoad:
    load = load_suite_file(path, ALLOWED, SITE_KEYS)
    assert isinstance(load, SuiteLoad)
    for p in load.problems:
        assert isinstance(p, Problem) and p.file == str(path)
        assert isinstance(p.path, str) and isinstance(p.message, str) and p.message
        assert p.line is None or isinstance(p.line, int)
        str(p)
    for t in load.tasks:
        assert validation_errors(t.task) == [], t.task
        assert t.id.startswith("t-") and t.suite == "regression"
    return load


@given(st.text(max_size=400))
def test_any_text_loads_or_is_named(text):
    load_text(text, ".yaml")
    load_text(text, ".json")


@given(st.binary(max_size=300))
def test_any_bytes_load_or_are_named(data):
    path = WORK / "regression" / "bytes.yaml"
    path.write_bytes(data)
    check_load(path)


@given(yamlish())
def test_yamlish_text_loads_or_is_named(text):
    load_text(text)


@given(mutated_tasks(), st.booleans())
def test_mutated_curated_tasks_load_or_are_named(doc, as_json):
    text = json.dumps(doc) if as_json else yaml.safe_dump(doc, allow_unicode=True)
    load_text(text, ".json" if as_json else ".yaml")


@given(JSON)
def test_validation_errors_is_a_list_of_strings_for_any_value(value):
    errors = validation_errors(value)
    assert isinstance(errors, list) and all(isinstance(e, str) for e in errors)


def test_the_curated_tasks_themselves_load():
    for path in sorted(SUITES_DIR.rglob("*.yaml")):
        load = load_suite_file(path, ALLOWED, SITE_KEYS)
        assert load.tasks and not load.problems, [str(p) for p in load.problems]


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_fuzzed_file_outside_a_suite_directory_is_named(suffix):
    path = WORK / f"loose{suffix}"
    path.write_text("site: harbor\n")
    (problem,) = load_suite_file(path, ALLOWED).problems
    assert problem.file == str(path) and "not in a suite directory" in problem.message


# Crashes fuzzing found in suites.py (fixed): an impossible date, and an unknown field whose
# name jsonschema quotes with double quotes (or as '').
CURATED_YAML = (SUITES_DIR / "regression" / "harbor-byline-is-site-name.yaml").read_text()


def test_an_impossible_date_is_a_problem_not_a_crash():
    load = load_text(CURATED_YAML.replace("day: 2026-11-20", "day: 2026-02-30"))
    assert load.problems and "2026-02-30" in str(load.problems[0])


@pytest.mark.parametrize("name", ["", "it's"])
def test_an_unknown_field_named_by_nothing_is_a_problem(name):
    doc = yaml.safe_load(CURATED_YAML)
    doc["constraints"][name] = None
    load = load_text(yaml.safe_dump(doc))
    assert not load.tasks and load.problems
