"""The tool specs a model is offered, derived from BrowserTools: every tool method is there,
a new one appears without further edits, and the specs are valid JSON Schema."""

from __future__ import annotations

import inspect
from typing import Any

import jsonschema
import pytest

from newsbench_dagster.core.agents.adapters.openai_tools import TOOLS, chat_tools
from newsbench_dagster.core.agents.targets import TARGET
from newsbench_dagster.core.agents.tool_specs import TARGET_NOTE, json_schema, tool_specs
from newsbench_dagster.core.agents.tools import BrowserTools

API = [
    *("goto", "back", "click", "type", "select", "check", "press", "scroll", "wait"),
    *("extract_text", "get_metadata", "links", "read_page", "accessibility_snapshot"),
    *("screenshot", "tabs", "open_tab", "switch_tab", "close_tab", "answer"),
]


def test_every_tool_method_is_a_spec_in_the_order_the_api_defines_them():
    specs = tool_specs()
    assert list(specs) == API
    public = {
        n for n, m in inspect.getmembers(BrowserTools) if not n.startswith("_") and callable(m)
    }
    # What is not a tool is not a coroutine: bookkeeping the adapters and the runner use.
    assert public - set(specs) == {"elapsed", "record", "use_tokens"}


def test_specs_are_json_schema_and_say_what_the_signatures_say():
    specs = tool_specs()
    for spec in specs.values():
        jsonschema.Draft202012Validator.check_schema(spec.parameters)
        assert spec.parameters["type"] == "object" and spec.description.endswith(".")
    assert specs["goto"].parameters == {
        "type": "object",
        "properties": {"url": {"type": "string"}},
        "required": ["url"],
    }
    scroll = specs["scroll"].parameters["properties"]
    assert scroll["direction"] == {"type": "string", "enum": ["down", "up"]}
    assert scroll["amount"] == {"type": "integer", "minimum": 0}
    answer = specs["answer"].parameters
    assert answer["required"] == ["value"] and answer["properties"]["value"]["type"] == "object"
    assert answer["properties"]["claims_success"]["description"]  # from the docstring's Args
    targeted = [n for n, s in specs.items() if set(TARGET) <= set(s.parameters["properties"])]
    assert targeted == ["click", "type", "select", "check", "press", "scroll", "extract_text"]
    for name in targeted:
        assert specs[name].description.endswith(TARGET_NOTE)
        props = specs[name].parameters["properties"]
        assert {k: props[k]["description"] for k in TARGET} == TARGET
    # A call a model might make checks against the schema like the API would take it.
    validator = jsonschema.Draft202012Validator(specs["scroll"].parameters)
    assert validator.is_valid({"direction": "up", "amount": 200})
    assert not validator.is_valid({"direction": "sideways"})
    assert not validator.is_valid({"amount": -1})


def test_a_new_tool_method_is_offered_without_further_edits(monkeypatch):
    async def zoom(self: BrowserTools, factor: float, *, smooth: bool = False) -> dict[str, Any]:
        """Zoom the page by a factor.

        Not a real tool: this docstring's second paragraph is for readers only.

        Args:
            factor: how much bigger, e.g. 1.5
        """
        return {"ok": True}

    monkeypatch.setattr(BrowserTools, "zoom", zoom, raising=False)
    specs = tool_specs()
    assert list(specs)[-1] == "zoom"
    assert specs["zoom"].description == "Zoom the page by a factor."
    assert specs["zoom"].parameters == {
        "type": "object",
        "properties": {
            "factor": {"type": "number", "description": "how much bigger, e.g. 1.5"},
            "smooth": {"type": "boolean"},
        },
        "required": ["factor"],
    }

    class Subclassed(BrowserTools):
        async def goto(self, url: str, referer: str | None = None) -> dict:
            """Open a URL, with a referer."""
            return {"ok": True}

    overridden = tool_specs(Subclassed)
    assert list(overridden) == list(specs)  # an override keeps its place
    assert set(overridden["goto"].parameters["properties"]) == {"url", "referer"}


def test_what_cannot_be_offered_is_refused():
    with pytest.raises(TypeError, match="no JSON Schema"):
        json_schema(int | str)

    class Undocumented(BrowserTools):
        async def nudge(self, dx: int) -> dict:
            return {"ok": True}

    with pytest.raises(ValueError, match="needs a docstring"):
        tool_specs(Undocumented)

    class Misdocumented(BrowserTools):
        async def nudge(self, dx: int) -> dict:
            """Nudge the page.

            Args:
                dy: a parameter that is not there
            """
            return {"ok": True}

    with pytest.raises(ValueError, match="describes no parameter dy"):
        tool_specs(Misdocumented)


def test_the_openai_tools_adapter_offers_the_derived_specs():
    specs = tool_specs()
    assert list(TOOLS) == [*specs, "finish"]
    for name, spec in specs.items():
        assert TOOLS[name].parameters == spec.parameters
        assert TOOLS[name].description.startswith(spec.description)
    assert "size only" in TOOLS["screenshot"].description  # a text-only model
    offered = chat_tools()
    assert [t["function"]["name"] for t in offered] == list(TOOLS)
    for t in offered:
        jsonschema.Draft202012Validator.check_schema(t["function"]["parameters"])
