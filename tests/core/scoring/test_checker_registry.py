"""The checker registry: one module per intent, named as the intent, each with one `check`;
an intent without a checker, a checker of no intent, a module without `check` or a task schema
that disagrees with the intents registry stops the import, naming what is wrong."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from newsbench_dagster.core.scoring import checkers
from newsbench_dagster.core.scoring.checkers import CHECKERS, SHARED, checker_registry
from newsbench_dagster.core.tasks.contract import task_schema
from newsbench_dagster.core.tasks.intents import INTENTS

SCHEMA_INTENTS = task_schema()["properties"]["intent"]["enum"]
CHECK = "def check(answer, evidence):\n    return None\n"


def _package(tmp_path, monkeypatch, modules: dict[str, str]) -> str:
    """A checker package of its own on sys.path, `modules` its files (name -> source)."""
    name = "checkers_" + tmp_path.name.replace("-", "_")
    folder = tmp_path / name
    folder.mkdir()
    (folder / "__init__.py").write_text("", encoding="utf-8")
    for module, source in modules.items():
        (folder / f"{module}.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_every_intent_is_checked_by_the_module_named_after_it():
    # Built afresh: other tests patch the module-level CHECKERS (and put keys back at the end).
    assert list(checker_registry(INTENTS, SCHEMA_INTENTS)) == list(INTENTS)
    assert set(CHECKERS) == set(INTENTS)
    for intent, fn in CHECKERS.items():
        assert fn is importlib.import_module(f"{checkers.__name__}.{intent}").check
    assert not SHARED & set(CHECKERS)


def test_a_package_that_fits_the_intents_gives_their_checkers(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, {"find_x": CHECK, "find_y": CHECK, "base": ""})
    found = checker_registry(["find_y", "find_x"], ["find_x", "find_y"], package)
    assert list(found) == ["find_y", "find_x"]


def test_an_intent_without_a_checker_names_the_missing_file():
    intents = [*INTENTS, "find_weather"]
    with pytest.raises(RuntimeError, match=r"'find_weather'.*checkers/find_weather\.py is missing"):
        checker_registry(intents, intents)


def test_a_checker_module_without_check_names_its_file(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, {"find_x": CHECK, "find_y": "CHECKS = {}\n"})
    with pytest.raises(RuntimeError, match=r"find_y\.py defines no check"):
        checker_registry(["find_x", "find_y"], ["find_x", "find_y"], package)


def test_a_checker_module_of_no_known_intent_names_its_file(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, {"find_x": CHECK, "top_headline": CHECK})
    with pytest.raises(RuntimeError, match=r"named after no known intent: .*top_headline\.py"):
        checker_registry(["find_x"], ["find_x"], package)


def test_a_schema_that_disagrees_with_the_intents_registry_is_refused():
    with pytest.raises(
        RuntimeError, match=r"task\.schema\.json.*only in the registry \['find_x'\]"
    ):
        checker_registry([*INTENTS, "find_x"], SCHEMA_INTENTS)
    with pytest.raises(
        RuntimeError, match=r"only in the schema \['find_x'\], only in the registry \[\]"
    ):
        checker_registry(INTENTS, [*SCHEMA_INTENTS, "find_x"])


def test_the_import_itself_fails_on_an_intent_without_a_checker():
    # A fresh interpreter: an intent (and its schema entry) added with no checker module.
    script = "\n".join(
        (
            "from newsbench_dagster.core.tasks import contract, intents",
            "schema = contract.task_schema()",
            "schema['properties']['intent']['enum'].append('find_weather')",
            "intents.INTENTS = {**intents.INTENTS, 'find_weather': None}",
            "import newsbench_dagster.core.scoring.checkers",
        )
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode != 0
    assert "find_weather.py is missing" in done.stderr
