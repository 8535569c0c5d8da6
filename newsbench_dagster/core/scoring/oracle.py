"""The oracle's version: a hash of every module that decides a verdict.

The modules are found, not listed: every module of `core.scoring` and of the intents package
(both are read through registries, so they are taken whole), the harness's page observation the
checkers read, and everything those import inside `newsbench_dagster`, followed statically
through `import` statements. Data files a module names (the page-metadata script) are hashed
with it. So any change to what judges a run (page understanding, text, similarity, grading...)
changes the version stored with every decision, and nothing that cannot change a verdict does.
"""

from __future__ import annotations

import ast
import hashlib
from functools import cache
from pathlib import Path

PACKAGE = "newsbench_dagster"
_ROOT = Path(__file__).resolve().parents[3]  # the directory holding the package
# Where verdicts are decided: scoring itself, the intents' contracts it reads (both packages are
# loaded by registries, so they are taken whole), and the observation of pages it judges from.
ROOTS = (
    "newsbench_dagster.core.scoring",
    "newsbench_dagster.core.tasks.intents",
    "newsbench_dagster.core.harness.observe",
)
_DATA_SUFFIXES = (".js", ".json", ".yaml", ".yml")


def _file_of(module: str, root: Path) -> Path | None:
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _package_modules(package: str, root: Path) -> list[str]:
    """A package and every module below it."""
    init = _file_of(package, root)
    if init is None or init.name != "__init__.py":
        return [package]
    out = []
    for path in sorted(init.parent.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def _imports(module: str, path: Path, root: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    base = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parent = base.split(".")[: len(base.split(".")) - node.level + 1]
                head = ".".join(parent + ([node.module] if node.module else []))
            else:
                head = node.module or ""
            names = [head, *(f"{head}.{a.name}" for a in node.names)]
        else:
            continue
        found |= {n for n in names if n.startswith(PACKAGE) and _file_of(n, root) is not None}
    return found


def _data_files(path: Path) -> list[Path]:
    """Files next to a module that it names in a string literal (a script, a rules file)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {
        n.value.rsplit("/", 1)[-1]
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and n.value.endswith(_DATA_SUFFIXES)
    }
    return sorted(p for p in (path.parent / name for name in names) if p.is_file())


@cache
def oracle_files(root: Path = _ROOT) -> tuple[Path, ...]:
    """Every file whose content can change a verdict, in a stable order; `root` is the
    directory holding the package (this checkout by default)."""
    todo = [m for start in ROOTS for m in _package_modules(start, root)]
    seen: dict[str, Path] = {}
    while todo:
        module = todo.pop()
        if module in seen or (path := _file_of(module, root)) is None:
            continue
        seen[module] = path
        todo += sorted(_imports(module, path, root) - set(seen))
    files = set(seen.values()) | {d for p in seen.values() for d in _data_files(p)}
    return tuple(sorted(files))


@cache
def oracle_version(root: Path = _ROOT) -> str:
    """`oracle@` + a hash of `oracle_files()` (paths and bytes): two decisions with the same
    oracle version were judged by the same code."""
    h = hashlib.sha256()
    for f in oracle_files(root):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return "oracle@" + h.hexdigest()[:12]
