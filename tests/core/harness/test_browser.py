"""Which Chromium a run launches."""

from __future__ import annotations

import pytest

from newsbench_dagster.core.harness import browser
from newsbench_dagster.core.harness.browser import BrowserOptions, find_chromium


@pytest.fixture
def system(tmp_path, monkeypatch):
    """A machine whose system Chromium and headless shell are files under tmp_path."""
    full, shell = tmp_path / "chromium", tmp_path / "chromium-headless-shell"
    monkeypatch.setattr(browser, "SYSTEM_CHROMIUM", (str(full),))
    monkeypatch.setattr(browser, "SYSTEM_HEADLESS_SHELL", (str(shell),))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    return full, shell


def test_headless_runs_launch_the_headless_shell_and_headful_ones_the_browser(system):
    full, shell = system
    full.touch()
    shell.touch()
    assert find_chromium(headless=True) == str(shell)
    assert find_chromium(headless=False) == str(full)
    assert BrowserOptions().launch_kwargs()["executable_path"] == str(shell)
    assert BrowserOptions(headless=False).launch_kwargs()["executable_path"] == str(full)


def test_without_a_headless_shell_headless_runs_use_the_browser(system):
    full, _ = system
    full.touch()
    assert find_chromium(headless=True) == str(full)


def test_an_explicit_executable_wins_and_a_missing_one_is_named(system, tmp_path):
    full, shell = system
    shell.touch()
    mine = tmp_path / "my-chrome"
    mine.touch()
    assert find_chromium(str(mine), headless=True) == str(mine)
    with pytest.raises(FileNotFoundError, match="nowhere/chrome"):
        find_chromium(str(tmp_path / "nowhere" / "chrome"))
    shell.unlink()
    assert find_chromium(headless=True) is None  # Playwright's own browser
