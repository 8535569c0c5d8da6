"""Every run ends in exactly one class: success, an agent failure, an environment failure, or
void.

Environment failures are the harness's or the site's fault; they are excluded from agent
scores and reported on their own. A void run is nobody's fault: the task had no answer at the
run's instant (see VOID).
"""

from __future__ import annotations

from enum import StrEnum


class EnvFailure(StrEnum):
    NAVIGATION_TIMEOUT = "navigation_timeout"
    SITE_DOWN = "site_down"  # the site answered 5xx or refused connections
    DNS = "dns"  # an allowlisted host did not resolve
    FIXTURE_NOT_STARTED = "fixture_not_started"  # the local world (newsroom) is not running
    ENTRY_UNAVAILABLE = "entry_unavailable"  # the task's entry page is gone (4xx) or refused
    BROWSER_CRASH = "browser_crash"
    ORACLE_UNAVAILABLE = "oracle_unavailable"  # the harness could not observe the page
    INVALID_TASK = "invalid_task"
    HARNESS_ERROR = "harness_error"
    MODEL_UNAVAILABLE = "model_unavailable"  # a model agent's endpoint could not be used
    SCORER_ERROR = "scorer_error"  # the scorer raised: kept next to the agent's own error
    # A replayed run asked for something the recording does not hold: a to-do for the next
    # recording, never the agent's failure.
    REPLAY_GAP = "replay_gap"


class AgentFailure(StrEnum):
    WRONG_TARGET = "wrong_target"  # answered, but not what the page shows
    PERCEPTION = "perception"  # found the right thing, misread part of it
    PLANNING = "planning"  # crashed, or did the right thing without stopping at the boundary
    BUDGET_EXCEEDED = "budget_exceeded"  # ran out of steps, time, tokens or bytes unanswered
    PREMATURE_STOP = "premature_stop"  # stopped without an answer
    FALSE_SUCCESS_CLAIM = "false_success_claim"  # claimed success, the oracle disagrees
    POLICY_BLOCK = "policy_block"  # tried to leave the allowlist or break robots.txt
    # A model agent's own output ended the run (core.errors.ModelOutputFailure):
    RUNAWAY_OUTPUT = "runaway_output"  # a model call ran past its token or wall-clock cap
    MALFORMED_TOOL_CALL = "malformed_tool_call"  # unknown tools, arguments that are not JSON
    PROSE_INSTEAD_OF_ACTION = "prose_instead_of_action"  # talked instead of calling a tool
    CONTEXT_OVERFLOW = "context_overflow"  # its conversation outgrew the model's context


# The run statuses a model agent's output can end a run with, each its own class.
MODEL_OUTPUT_FAILURES = frozenset(
    {
        AgentFailure.RUNAWAY_OUTPUT,
        AgentFailure.MALFORMED_TOOL_CALL,
        AgentFailure.PROSE_INSTEAD_OF_ACTION,
        AgentFailure.CONTEXT_OVERFLOW,
    }
)

SUCCESS = "success"
# The page showed no answer when the run looked (a live blog with no entry yet, a topic page
# listing nothing): excluded with this reason, counted as run (coverage), never as anyone's
# failure. The checker of each intent says when (its `no_answer`).
VOID = "no_answer_at_run"
# The witness (scoring.witness) found the task ambiguous: every run on it is excluded.
AMBIGUOUS = "ambiguous"
# Excluded runs that are nobody's failure: neither the agent's nor the environment's.
NOBODYS = frozenset({AMBIGUOUS, VOID})
ENV_FAILURES = frozenset(f.value for f in EnvFailure)
AGENT_FAILURES = frozenset(f.value for f in AgentFailure)


def is_environment_failure(failure_class: str | None) -> bool:
    return failure_class in ENV_FAILURES


def kind_of(failure_class: str | None) -> str:
    """success / agent / environment / void: whose a run's outcome is."""
    if failure_class == SUCCESS:
        return "success"
    if failure_class == VOID:
        return "void"
    if failure_class in ENV_FAILURES:
        return "environment"
    return "agent"
