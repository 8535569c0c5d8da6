"""llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`), with a request's
`max_tokens` honoured when it calls tools: what `LocalModelServer` starts.

llama-cpp-python's `chatml-function-calling` handler drops `max_tokens` (it generates a tool
call's arguments, and a prose reply, with `max_tokens=None`: up to the context window). A model
that never closes its JSON string then generates until the harness's wall-clock cap cuts the
call, and the server must be restarted. The time that takes grows with the machine's load, so a
busy machine was charged to the model. Here each chat request's `max_tokens` is a budget shared
by every completion the handler makes for it (tool name, arguments, follow-up), so a runaway
stops at the token cap the manifest set (`max_completion_tokens`), and the reply says so as
OpenAI's does: `finish_reason: "length"`. The cap does not depend on the load.

    python -m newsbench_dagster.core.agents.llama_serve --model F.gguf ...  (llama_cpp.server's
    own arguments)
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

# The budget of the chat request this thread serves (the server runs each in one thread).
_request = threading.local()


def _within_budget(create_completion: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(create_completion)
    def bounded(self: Any, *args: Any, **kwargs: Any) -> Any:
        left = getattr(_request, "left", None)
        if left is None or kwargs.get("stream"):
            return create_completion(self, *args, **kwargs)
        asked = kwargs.get("max_tokens")
        # 1 at least: llama-cpp-python reads max_tokens <= 0 as "up to the context window".
        kwargs["max_tokens"] = max(1, left if not asked or asked < 0 else min(asked, left))
        out = create_completion(self, *args, **kwargs)
        if isinstance(out, dict):
            _request.left = left - int((out.get("usage") or {}).get("completion_tokens") or 0)
            if any(c.get("finish_reason") == "length" for c in out.get("choices") or ()):
                _request.cut = True
        return out

    return bounded


def _with_budget(create_chat_completion: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(create_chat_completion)
    def budgeted(self: Any, *args: Any, **kwargs: Any) -> Any:
        cap = kwargs.get("max_tokens")
        if not isinstance(cap, int) or cap <= 0 or kwargs.get("stream"):
            return create_chat_completion(self, *args, **kwargs)
        _request.left, _request.cut = cap, False
        try:
            out = create_chat_completion(self, *args, **kwargs)
        finally:
            _request.left = None
        if _request.cut and isinstance(out, dict):
            # A tool call cut at the cap is reported as "tool_calls" by the handler.
            for choice in out.get("choices") or ():
                choice["finish_reason"] = "length"
        return out

    return budgeted


def main() -> None:
    """Patch llama_cpp.Llama in this (server) process, then serve."""
    from llama_cpp import Llama
    from llama_cpp.server.__main__ import main as serve

    Llama.create_completion = _within_budget(Llama.create_completion)
    Llama.create_chat_completion = _with_budget(Llama.create_chat_completion)

    serve()


if __name__ == "__main__":
    main()
