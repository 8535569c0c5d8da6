"""The oracle version follows the code that judges runs: found by following imports from
scoring, so page understanding, text and grading count, and the CLI does not."""

from __future__ import annotations

import shutil

from newsbench_dagster.core.scoring.oracle import oracle_files, oracle_version
from tests.support.paths import REPO


def _copy(tmp_path):
    shutil.copytree(REPO / "newsbench_dagster", tmp_path / "newsbench_dagster")
    return tmp_path


def _touch(root, relative: str) -> None:
    path = root / "newsbench_dagster" / relative
    path.write_text(path.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")


def test_the_modules_that_decide_verdicts_are_found_not_listed():
    files = {f.relative_to(REPO).as_posix() for f in oracle_files()}
    core = "newsbench_dagster/core/"
    # What judges a run, whether or not anyone remembered to list it.
    for needed in (
        "scoring/score.py",
        "scoring/grading/grade.py",
        "scoring/checkers/__init__.py",
        "reading/text.py",
        "reading/semantic.py",
        "reading/page.py",
        "reading/page_metadata.js",
        "harness/observe.py",
    ):
        assert core + needed in files, needed
    # ...and what cannot change a verdict is not in it.
    for outside in ("newsbench_dagster/cli", "newsbench_dagster/definitions.py", core + "release/"):
        assert not any(f.startswith(outside) for f in files), outside


def test_a_change_to_page_understanding_changes_the_version_and_the_cli_does_not(tmp_path):
    root = _copy(tmp_path)
    before = oracle_version(root)
    assert before == oracle_version(REPO)  # the same bytes, the same version
    _touch(root, "definitions.py")
    oracle_files.cache_clear()
    oracle_version.cache_clear()
    assert oracle_version(root) == before
    _touch(root, "core/reading/text.py")
    oracle_files.cache_clear()
    oracle_version.cache_clear()
    assert oracle_version(root) != before
