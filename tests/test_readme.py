"""The README's commands name files that exist: a new user copies them first. Every
`agents/*.yaml` and `suites/...` path in its code (fenced blocks and inline code), and every
manifest a `--candidate`, `--baseline` or `--agent` in a command names, by path or by name."""

from __future__ import annotations

import re

from newsbench_dagster.core.agents.protocol import load_manifests
from newsbench_dagster.paths import AGENTS_DIR, PROJECT_ROOT

README = PROJECT_ROOT / "README.md"
FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`([^`\n]+)`")
# A path under agents/ or suites/ to one file; placeholders (agents/X.yaml, NAME) are capitals.
PATH = re.compile(r"(?<![\w/.-])((?:agents|suites)/[\w./-]*[\w-]\.(?:ya?ml|json|md))")
NAMED = re.compile(r"--(?:candidate|baseline|agent)[ =](\S+)")


def _code() -> list[str]:
    text = README.read_text(encoding="utf-8")
    blocks = FENCED.findall(text)
    return [*blocks, *INLINE.findall(FENCED.sub("", text))]


def _placeholder(path: str) -> bool:
    return any(part.isupper() for part in re.split(r"[/.]", path))


def test_every_agents_and_suites_file_the_readme_names_exists():
    named = {m for code in _code() for m in PATH.findall(code) if not _placeholder(m)}
    assert any(p.startswith("agents/") for p in named) and any(
        p.startswith("suites/") for p in named
    ), named  # the pattern still finds what it checks
    missing = sorted(p for p in named if not (PROJECT_ROOT / p).is_file())
    assert not missing, f"README.md names files that do not exist: {missing}"


def test_every_manifest_a_readme_command_names_resolves():
    manifests = load_manifests(AGENTS_DIR)
    known = {m.name for m in manifests} | {m.agent_version for m in manifests}
    known |= {f"{m.name}@{m.version}" for m in manifests}
    named = {m for code in _code() for m in NAMED.findall(code) if not _placeholder(m)}
    assert named, "no --candidate/--baseline/--agent found in the README's commands"
    bad = sorted(
        n
        for n in named
        if not ((PROJECT_ROOT / n).is_file() if n.endswith((".yaml", ".yml")) else n in known)
    )
    assert not bad, f"README.md commands name manifests that do not exist: {bad}"
