"""The agent's errors: a job refused at creation, and a tool call refused or failed."""

from __future__ import annotations

from typing import Final

from thoth.errors import PreconditionError, Problem, ThothError

AGENT_UNAVAILABLE: Final = "agent_unavailable"

# The codes a refused tool call carries back to the model (and into the transcript).
PATH_OUTSIDE_WIKI: Final = "path_outside_wiki"
PAGE_NOT_FOUND: Final = "page_not_found"
PAGE_NOT_ALLOWED: Final = "page_label_not_allowed"
BAD_ARGUMENTS: Final = "bad_arguments"
UNKNOWN_TOOL: Final = "unknown_tool"
PATH_UNREADABLE: Final = "path_unreadable"  # a name too long, a link loop: the OS refused it
TOOL_FAILED: Final = "tool_failed"  # the tool broke on this input; the job goes on
# What a tool or a run may raise on hostile input or a defect nobody foresaw (a name too long,
# a link loop, a parser's recursion, memory): caught at the tool boundary and around a job,
# logged with its traceback and turned into a coded outcome, so the worker lives on.
UNFORESEEN: Final = (OSError, RuntimeError, MemoryError, ValueError, TypeError, LookupError)


class AgentUnavailable(PreconditionError):
    """No usable model (no key in the environment variable `[llm]` names) or `[agent]`
    disabled: a job would wait forever, so none is created."""

    code = AGENT_UNAVAILABLE

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(
            f"{message} -> {hint}",
            problems=[Problem("thoth.toml", message, hint=hint, code=AGENT_UNAVAILABLE)],
        )


class ToolRefused(ThothError):
    """A tool call the agent's tools refuse or cannot serve. The model reads the code and
    message as the call's result; the job goes on."""

    code = "tool_refused"
