"""Playwright's Node.js driver, started for every batch, keeps its compiled code between starts
(`core.harness.browser.playwright`): a real driver started and stopped fills the cache."""

from __future__ import annotations

import asyncio
import os

from newsbench_dagster.core.harness.browser import playwright


def _start_and_stop() -> None:
    async def go() -> None:
        async with playwright() as pw:
            assert pw.chromium.name == "chromium"

    asyncio.run(go())


def test_the_driver_fills_the_newsbench_cache_under_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("NODE_COMPILE_CACHE", "")  # restored (or removed again) after the test
    monkeypatch.delenv("NODE_COMPILE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    _start_and_stop()
    cache = tmp_path / "xdg" / "newsbench" / "node"

    assert os.environ["NODE_COMPILE_CACHE"] == str(cache)
    # Node wrote the compiled code there (it writes at exit; nothing would be there if the
    # variable never reached the driver).
    assert [p for p in cache.rglob("*") if p.is_file()], sorted(cache.rglob("*"))


def test_a_cache_already_set_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("NODE_COMPILE_CACHE", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    _start_and_stop()
    assert [p for p in (tmp_path / "mine").rglob("*") if p.is_file()]
    assert not (tmp_path / "xdg").exists()
