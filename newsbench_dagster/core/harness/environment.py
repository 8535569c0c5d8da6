"""The environment manifest stored with every run: the browser and its profile, the agent
(adapter, version, settings, model, prompt), the task's seed and set, the world, and the
versions of the packages the run depended on, so that a run can be reproduced."""

from __future__ import annotations

import platform
import sys
from functools import cache
from importlib import metadata
from typing import Any

from playwright.async_api import Browser

from newsbench_dagster.core.agents.protocol import Agent, settings_of


@cache
def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("newsbench", "playwright"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "unknown"
    return out


def environment_manifest(
    browser: Browser,
    task: dict,
    agent: Agent,
    profile,
    *,
    task_set: dict[str, Any] | None,
    world: dict[str, Any],
) -> dict:
    manifest = agent.manifest
    return {
        "browser": "chromium",
        "browser_version": browser.version,
        **profile.manifest(),
        "agent_adapter": manifest.adapter,
        "agent_version": manifest.agent_version,
        "agent_settings": settings_of(agent),
        "model": manifest.model,
        "prompt_hash": manifest.prompt_hash,
        "manifest_hash": manifest.content_hash,
        "task_seed": task["seed"],
        "task_set": task_set,
        "world": world,
        "packages": package_versions(),
        "platform": f"{platform.system()} {platform.machine()}",
        "argv0": sys.argv[0],
    }
