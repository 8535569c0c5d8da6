"""The observation budget of a model agent: what is sent to the model each turn must fit its
context window, whatever the pages the tools returned.

The conversation the adapter keeps is never changed; each call sends a fitted copy. What the
task needs stays whole: the system prompt, the task, and every turn the model itself wrote
(its tool calls). Tool results give way, oldest first: an old result becomes a stub that says
how much was elided (the model can ask again); then the newest results are cut to their head
(readings put the page's title, URL and metadata first). When even that does not fit, the
conversation has outgrown the model: the run ends as the agent's `context_overflow`. Every
trim is recorded in the run's `adapter.model_loop.context`.

Tokens are estimated from characters, at a rate calibrated from the prompt tokens the server
reports for what was sent (starting at a conservative 3 characters a token).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from newsbench_dagster.core.errors import ModelOutputFailure

STUB = "[elided to fit the model's context: {n} bytes; call the tool again to see it]"
MIN_KEEP = 200  # characters of a tool result always kept when it is cut
MARGIN_TOKENS = 64  # the chat template's own tokens around each message


def _chars(messages: list[dict], tools: list[dict] | None) -> int:
    return len(json.dumps(messages, ensure_ascii=False)) + (
        len(json.dumps(tools, ensure_ascii=False)) if tools else 0
    )


@dataclass
class ContextBudget:
    window: int  # the model's context, tokens
    reserve: int  # tokens kept free for the completion (its cap)
    chars_per_token: float = 3.0
    calls: int = 0
    trimmed_calls: int = 0
    elided_results: int = 0
    cut_chars: int = 0
    _last_chars: int = field(default=0, repr=False)

    @property
    def limit(self) -> int:
        """Tokens the prompt may take."""
        return self.window - self.reserve - MARGIN_TOKENS

    def tokens(self, messages: list[dict], tools: list[dict] | None) -> int:
        return int(_chars(messages, tools) / self.chars_per_token) + 1

    def calibrate(self, prompt_tokens: int | None) -> None:
        """Learn characters per token from what the server counted for the last prompt."""
        if prompt_tokens and self._last_chars:
            # Never trust a rate above 4.5: a rough page could tokenise worse than the last.
            self.chars_per_token = min(4.5, max(1.5, self._last_chars / prompt_tokens))

    def fit(self, messages: list[dict], tools: list[dict] | None) -> list[dict]:
        """The messages to send this turn (copies where trimmed)."""
        self.calls += 1
        if self.limit <= 0:
            raise ModelOutputFailure(
                "context_overflow",
                f"the model's context ({self.window} tokens) leaves no room for a prompt "
                f"beside its {self.reserve}-token completion cap",
            )
        out = [dict(m) for m in messages]
        results = [i for i, m in enumerate(out) if m.get("role") == "tool"]
        over = self.tokens(out, tools) - self.limit
        trimmed = False
        # Oldest results first become stubs, while over the limit (the newest stay whole).
        newest = set(_newest_block(out))
        for i in results:
            if over <= 0:
                break
            if i in newest:
                continue
            over -= self._shrink(out[i], 0)
            trimmed = True
        # Then the newest results are cut to what fits.
        for i in sorted(newest, reverse=True):
            if over <= 0:
                break
            content = out[i].get("content") or ""
            keep = max(MIN_KEEP, len(content) - int(over * self.chars_per_token) - 80)
            over -= self._shrink(out[i], keep)
            trimmed = True
        if trimmed:
            self.trimmed_calls += 1
        tokens = self.tokens(out, tools)
        if tokens > self.limit:
            raise ModelOutputFailure(
                "context_overflow",
                f"the conversation needs ~{tokens} tokens with every tool result cut, over "
                f"the {self.limit} the model's {self.window}-token context leaves a prompt",
            )
        self._last_chars = _chars(out, tools)
        return out

    def _shrink(self, message: dict, keep: int) -> int:
        """Cut a tool message to `keep` characters (0: a stub); the tokens saved."""
        content = message.get("content") or ""
        if len(content) <= max(keep, 1) or content.startswith(STUB[:20]):
            return 0
        if keep:
            more = len(content) - keep
            message["content"] = f"{content[:keep]}\n...[cut to fit the model's context: {more}]"
        else:
            message["content"] = STUB.format(n=len(content.encode("utf-8")))
            self.elided_results += 1
        saved = len(content) - len(message["content"])
        self.cut_chars += max(0, saved)
        return int(max(0, saved) / self.chars_per_token)

    def as_dict(self) -> dict:
        return {
            "window": self.window,
            "reserve": self.reserve,
            "chars_per_token": round(self.chars_per_token, 2),
            "calls": self.calls,
            "trimmed_calls": self.trimmed_calls,
            "elided_results": self.elided_results,
            "cut_chars": self.cut_chars,
        }


def _newest_block(messages: list[dict]) -> list[int]:
    """Indexes of the tool results answering the last assistant turn."""
    out = []
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") != "tool":
            break
        out.append(i)
    return out
