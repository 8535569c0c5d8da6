"""Reading the YAML and JSON files users hand us (suites, task files, agent manifests,
sites.yaml, profiles, replay rule files, grading specs) within limits, with one error that
names the file and, when known, the line.

A 520-byte YAML "billion laughs" (aliases of aliases) is tiny as a document graph but grows
nine times per level once anything walks or copies it; a JSON file nested a million deep
overflows the stack of whatever recurses into it. So before anything sees the data:

* the text is at most MAX_FILE_BYTES and UTF-8 (the error names the line of the first bad
  byte);
* YAML is composed by a loader that counts, node by node, how many nodes the document would
  have with every alias expanded, and refuses it past MAX_EXPANDED_NODES, or past MAX_ALIASES
  aliases, or nested past MAX_DEPTH (the error names the line where the budget ran out);
  an impossible date (`2026-13-45`) is an error at its line, not a ValueError;
* JSON is refused nested past MAX_DEPTH.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from newsbench_dagster.core.errors import InputFileError

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_ALIASES = 100
MAX_EXPANDED_NODES = 200_000
MAX_DEPTH = 64


def read_text(path: str | Path) -> str:
    """A user's file as text: it must exist, be at most MAX_FILE_BYTES and be UTF-8."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InputFileError(path, f"{size} bytes, over the {MAX_FILE_BYTES} byte limit")
        data = path.read_bytes()
    except FileNotFoundError as e:
        raise InputFileError(path, "no such file") from e
    except IsADirectoryError as e:
        raise InputFileError(path, "a directory, not a file") from e
    except OSError as e:
        raise InputFileError(path, f"cannot read: {e.strerror or e}") from e
    return decode_utf8(data, path)


def decode_utf8(data: bytes, where: str | Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        problem = f"not UTF-8 text (byte {e.start}: {data[e.start : e.start + 1]!r})"
        raise InputFileError(where, problem, line) from e


def load_yaml(text: str, where: str | Path) -> Any:
    """One YAML document with the safe loader's types, within the limits above."""
    if len(text) > MAX_FILE_BYTES:
        raise InputFileError(where, f"{len(text)} characters, over the {MAX_FILE_BYTES} limit")
    loader = None
    try:
        loader = BoundedLoader(text)  # the reader refuses control characters here already
        return loader.get_single_data()
    except yaml.reader.ReaderError as e:
        line = text.count("\n", 0, e.position) + 1
        raise InputFileError(where, f"not valid YAML: {str(e).splitlines()[0]}", line) from e
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = e.problem or e.context or str(e).splitlines()[0]
        refused = isinstance(e, Refused)
        raise InputFileError(
            where,
            problem if refused else f"not valid YAML: {problem}",
            mark.line + 1 if mark is not None else None,
        ) from e
    except yaml.YAMLError as e:
        raise InputFileError(where, f"not valid YAML: {str(e).splitlines()[0]}") from e
    finally:
        if loader is not None:
            loader.dispose()


def compose_yaml(text: str) -> yaml.Node | None:
    """The node tree of YAML that `load_yaml` accepted (for line numbers)."""
    loader = BoundedLoader(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def load_json(text: str, where: str | Path) -> Any:
    """One JSON document of a user's file, within `loads`' limits; errors name the file."""
    try:
        return loads(text)
    except json.JSONDecodeError as e:
        raise InputFileError(where, f"not valid JSON: {e.msg} (column {e.colno})", e.lineno) from e
    except ValueError as e:  # too big or too deep
        raise InputFileError(where, str(e)) from e


def loads(text: str | bytes, what: str = "JSON") -> Any:
    """`json.loads` for text from outside (agent answers, tool-call arguments, a model
    endpoint's replies, users' files): nested past MAX_DEPTH, or over MAX_FILE_BYTES, is a
    ValueError like any other bad JSON, never a RecursionError (a million "[" overflow the
    decoder)."""
    if len(text) > MAX_FILE_BYTES:
        raise ValueError(f"{len(text)} characters, over the {MAX_FILE_BYTES} limit")
    try:
        data = json.loads(text)
    except RecursionError:
        data = None
    else:
        if _depth(data) <= MAX_DEPTH:
            return data
    raise ValueError(f"{what} nested deeper than {MAX_DEPTH} levels")


def _depth(data: Any) -> int:
    """How deep lists and objects nest (without recursion: the input may be hostile)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            deepest = max(deepest, depth)
            if depth <= MAX_DEPTH:
                stack += [(v, depth + 1) for v in value]
    return deepest


class Refused(yaml.MarkedYAMLError):
    """What the bounded loader refuses: a document past one of its limits, an impossible date."""


class BoundedLoader(yaml.SafeLoader):
    """The safe loader, counting as it composes: aliases met, nesting depth, and each node's
    size with its aliases expanded (an alias costs what the node it names costs, so the
    count grows as the expansion would, while the tree itself stays small)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        mark = self.peek_event().start_mark
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise Refused(None, None, f"more than {MAX_ALIASES} YAML aliases", mark)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise Refused(None, None, f"nested deeper than {MAX_DEPTH} levels", mark)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if id(node) not in self._sizes:
            if isinstance(node, yaml.SequenceNode):
                children = node.value
            elif isinstance(node, yaml.MappingNode):
                children = [n for pair in node.value for n in pair]
            else:
                children = []
            size = 1 + sum(self._sizes.get(id(c), 1) for c in children)
            if size > MAX_EXPANDED_NODES:
                problem = (
                    f"YAML aliases expand to more than {MAX_EXPANDED_NODES} nodes (an alias bomb?)"
                )
                raise Refused(None, None, problem, mark)
            self._sizes[id(node)] = size
        return node

    def construct_yaml_timestamp(self, node: yaml.ScalarNode) -> Any:
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError) as e:
            raise Refused(None, None, f"invalid date {node.value!r}: {e}", node.start_mark) from e


BoundedLoader.add_constructor("tag:yaml.org,2002:timestamp", BoundedLoader.construct_yaml_timestamp)
