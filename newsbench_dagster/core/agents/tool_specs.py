"""The tools a model is offered, derived from the tool API itself (core.agents.tools).

Every public coroutine method of BrowserTools is a tool, inherited ones first, each class's in
the order it defines them. A tool's name is the method's; its description is the first
paragraph of the method's docstring (plus how to name an element, for the tools that take a
target); its parameters are a JSON Schema object built from the signature and type hints: a
parameter without a default is required, `X | None` is an optional X, a Literal is an enum,
an Annotated bound such as pydantic's NonNegativeInt a minimum. Parameters are described by
the docstring's `Args:` section, the target keywords by core.agents.targets.TARGET.

Adapters turn these specs into their API's format, so a new tool method is offered to every
model without further edits.
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import (
    Annotated,
    Any,
    Literal,
    Union,
    Unpack,
    get_args,
    get_origin,
    get_type_hints,
)

from newsbench_dagster.core.agents.targets import TARGET
from newsbench_dagster.core.agents.tools import BrowserTools

TARGET_NOTE = "Name the element by one of selector, role (+ name), label, text, placeholder."

JSON_TYPES: dict[type, str] = {
    bool: "boolean",  # before int: bool is an int too
    int: "integer",
    float: "number",
    str: "string",
    dict: "object",
    list: "array",
}

_ARG_LINE = re.compile(r"^(\s+)(\w+): (.+)$")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # a JSON Schema of type object


def tool_specs(tools: type = BrowserTools) -> dict[str, ToolSpec]:
    """The tools of a tool API class, by name, in the order described above."""
    specs: dict[str, ToolSpec] = {}
    for klass in reversed(tools.__mro__):
        for name, method in vars(klass).items():
            if not name.startswith("_") and inspect.iscoroutinefunction(method):
                specs[name] = spec_of(name, method)
    return specs


def spec_of(name: str, method: Callable[..., Any]) -> ToolSpec:
    """One tool method's spec."""
    description, documented = _docstring(method)
    params = _parameters(name, method)
    targeted = set(TARGET) <= set(params)
    properties: dict[str, dict] = {}
    for param, (hint, _) in params.items():
        schema = json_schema(hint)
        about = documented.pop(param, None) or (TARGET.get(param) if targeted else None)
        if about:
            schema["description"] = about
        properties[param] = schema
    if documented:
        raise ValueError(f"{name}: its docstring describes no parameter {', '.join(documented)}")
    if targeted:
        description = f"{description} {TARGET_NOTE}"
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    required = [param for param, (_, needed) in params.items() if needed]
    if required:
        parameters["required"] = required
    return ToolSpec(name, description, parameters)


def _parameters(name: str, method: Callable[..., Any]) -> dict[str, tuple[Any, bool]]:
    """A method's parameters after self: each one's type hint and whether it is required.
    `**kwargs: Unpack[SomeTypedDict]` stands for the TypedDict's keys."""
    hints = get_type_hints(method, include_extras=True)
    out: dict[str, tuple[Any, bool]] = {}
    for param in list(inspect.signature(method).parameters.values())[1:]:
        hint = hints[param.name]
        if param.kind is param.VAR_KEYWORD and get_origin(hint) is Unpack:
            keywords = get_args(hint)[0]
            for key, key_hint in get_type_hints(keywords, include_extras=True).items():
                out[key] = (key_hint, key in keywords.__required_keys__)
        elif param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{name}: *args and untyped **kwargs cannot be offered to a model")
        else:
            out[param.name] = (hint, param.default is param.empty)
    return out


def json_schema(hint: Any) -> dict[str, Any]:
    """The JSON Schema of a parameter's type hint (see the module docstring for the forms)."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        schema = json_schema(args[0])
        for bound in args[1:]:
            if getattr(bound, "ge", None) is not None:
                schema["minimum"] = bound.ge
        return schema
    if origin in (Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        if len(kinds) == 1:
            return json_schema(kinds[0])
    elif origin is Literal:
        return {**json_schema(type(args[0])), "enum": list(args)}
    elif (origin or hint) in JSON_TYPES:
        return {"type": JSON_TYPES[origin or hint]}
    raise TypeError(f"no JSON Schema for the type hint {hint!r}")


def _docstring(method: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The first paragraph of a docstring on one line, and its `Args:` descriptions."""
    doc = inspect.getdoc(method) or ""
    summary = " ".join(doc.split("\n\n", 1)[0].split())
    if not summary:
        raise ValueError(f"{method.__name__}: a tool needs a docstring to tell the model")
    documented: dict[str, str] = {}
    _, _, section = doc.partition("\nArgs:\n")
    indent, last = None, None
    for line in section.splitlines():
        if not line.strip():
            break
        found = _ARG_LINE.match(line)
        if found and indent in (None, len(found.group(1))):
            indent, last = len(found.group(1)), found.group(2)
            documented[last] = found.group(3).strip()
        elif last is not None:  # a description going on over several lines
            documented[last] += " " + line.strip()
    return summary, documented
