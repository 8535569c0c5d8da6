"""Errors that carry the offending input in their message, so a user knows what to fix."""


class NewsbenchError(Exception):
    """Base class for errors a user can act on (bad config, bad input)."""


class ConfigError(NewsbenchError):
    """A configuration file (sites.yaml, an agent manifest) is invalid."""


class InvalidTask(NewsbenchError):
    """A task does not satisfy the task schema."""
