"""Errors that carry the offending input in their message, so a user knows what to fix."""


class NewsbenchError(Exception):
    """Base class for errors a user can act on (bad config, bad input)."""


class ConfigError(NewsbenchError):
    """A configuration file (sites.yaml, an agent manifest) is invalid."""


class InvalidTask(NewsbenchError):
    """A task does not satisfy the task schema."""


class ModelEndpointError(RuntimeError):
    """A model-backed agent's endpoint failed. `environmental` says whose failure it is: True
    when the endpoint could not be used at all (unreachable, timing out, 5xx or 429 after
    retries, the key missing or refused), which says nothing about the agent; False when the
    endpoint refused what the agent sent (a 400 for a context that grew too long, say) or
    answered something unusable, which is the agent's doing."""

    def __init__(self, message: str, *, environmental: bool, status: int | None = None) -> None:
        super().__init__(message)
        self.environmental = environmental
        self.status = status
