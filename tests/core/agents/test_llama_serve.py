"""llama_serve's budget: one chat request's max_tokens shared by every completion the tool-calling
handler makes for it (tool name, arguments, follow-up), and a cut reported as "length". Here
with a stand-in for llama_cpp.Llama's two methods (the arithmetic); against the real server in
tests/core/agents/test_local_model.py."""

from __future__ import annotations

from newsbench_dagster.core.agents import llama_serve


class Handler:
    """What chatml-function-calling does: three completions, each asked with max_tokens=None
    (it drops the request's), each wanting `wants` tokens."""

    def __init__(self, wants: list[int]) -> None:
        self.wants, self.asked = wants, []

    def create_completion(self, **kwargs):
        self.asked.append(kwargs.get("max_tokens"))
        want = self.wants[len(self.asked) - 1]
        cap = kwargs.get("max_tokens") or 10**9
        made = min(want, cap)
        finish = "length" if made < want else "stop"
        return {"choices": [{"finish_reason": finish}], "usage": {"completion_tokens": made}}

    def create_chat_completion(self, **kwargs):
        for _ in self.wants:
            self.create_completion(max_tokens=None)
        return {"choices": [{"finish_reason": "tool_calls"}]}


def _patched(handler: Handler):
    completion = llama_serve._within_budget(type(handler).create_completion)
    handler.create_completion = completion.__get__(handler)
    return llama_serve._with_budget(type(handler).create_chat_completion).__get__(handler)


def test_the_requests_cap_is_shared_by_the_handlers_completions_and_a_cut_says_length():
    runaway = Handler([5, 4000, 3])  # the name, arguments that never end, the follow-up
    out = _patched(runaway)(max_tokens=256)
    assert runaway.asked == [256, 251, 1]  # never None (= up to the context window), never 0
    assert out["choices"][0]["finish_reason"] == "length"


def test_a_call_within_its_cap_is_left_as_the_handler_made_it():
    tidy = Handler([5, 40, 3])
    out = _patched(tidy)(max_tokens=256)
    assert tidy.asked == [256, 251, 211]
    assert out["choices"][0]["finish_reason"] == "tool_calls"


def test_without_a_cap_or_outside_a_chat_request_nothing_is_bounded():
    free = Handler([5, 4000, 3])
    out = _patched(free)()  # no max_tokens asked: llama-cpp-python's own behaviour
    assert free.asked == [None, None, None]
    assert out["choices"][0]["finish_reason"] == "tool_calls"
    plain = Handler([4000])
    _patched(plain)
    assert plain.create_completion(max_tokens=None)["usage"]["completion_tokens"] == 4000
