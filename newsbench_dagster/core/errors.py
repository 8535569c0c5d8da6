"""Errors that carry the offending input in their message, so a user knows what to fix."""


class NewsbenchError(Exception):
    """Base class for errors a user can act on (bad config, bad input)."""


class ConfigError(NewsbenchError):
    """A configuration file (sites.yaml, an agent manifest) is invalid."""


class InputFileError(ConfigError):
    """A file a user gave (YAML or JSON: a suite, a task file, a manifest, sites.yaml) that
    cannot be read: missing, not UTF-8, not valid, or past a size, nesting or alias limit.
    Its message is `file[:line]: problem`."""

    def __init__(self, where: object, problem: str, line: int | None = None) -> None:
        self.where, self.problem, self.line = str(where), problem, line
        super().__init__(f"{self.where}:{line}: {problem}" if line else f"{self.where}: {problem}")


class InvalidTask(NewsbenchError):
    """A task does not satisfy the task schema."""


class ModelEndpointError(RuntimeError):
    """A model-backed agent's endpoint failed. `fault` says whose failure it is:

    * "environment": the endpoint could not be used at all (unreachable, 5xx or 429 after
      retries, the key missing or refused), which says nothing about the agent;
    * "harness": the endpoint refused the request *we* built (a 4xx, or a 5xx whose body is a
      validation error of the request): our bug, shown loudly, never blamed on anyone else;
    * "agent": the endpoint answered something unusable, which is the agent's doing.
    """

    def __init__(self, message: str, *, fault: str, status: int | None = None) -> None:
        super().__init__(message)
        if fault not in ("environment", "harness", "agent"):
            raise ValueError(f"fault must be environment, harness or agent, not {fault!r}")
        self.fault = fault
        self.status = status

    @property
    def environmental(self) -> bool:
        return self.fault == "environment"


class ModelOutputFailure(RuntimeError):
    """What a model did that ends its run as the agent's failure, with `kind` its class in the
    taxonomy (`scoring.failures.MODEL_OUTPUT_FAILURES`): output that ran past its token or
    time cap, tool calls it kept getting wrong, prose where an action was due, a conversation
    that no longer fits its context. Never an environment failure, never a crash."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
