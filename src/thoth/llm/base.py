"""What every chat model client shares: the protocols, the tool and reply types, LLMError and
the translation of the SDKs' failures. The clients are in thoth.llm.openai_chat and
thoth.llm.anthropic_chat, imported only when `[llm]` picks one (the SDKs are slow to import).

retries: a failure is reported once, attributed, and never hidden behind a second attempt.

Three uses: `complete_json` (one JSON object as text; given a `ReplySchema`, the schema goes
out as the provider's structured output: OpenAI `response_format` json_schema, Anthropic a
tool the model is forced to call) and `call_tools` (the model answers with calls to the tools
it was offered: OpenAI chat completions `tools`, Anthropic messages `tools`). `call_tools`
reports each call as the provider sent it; a call whose arguments are not a JSON object is kept
with its `error`, for the caller to refuse with attribution. `converse` is `call_tools` over a
conversation: the model's earlier turns (its text and tool calls) and the results of those
calls go back in each provider's wire format (OpenAI `assistant` messages with `tool_calls`
then `tool` messages; Anthropic `assistant` `tool_use` blocks then a `user` message of
`tool_result` blocks), so the model can call tools again or answer in text — or, asked with
`answer_only`, only answer in text (the provider's tool choice "none").

A reply the model cut at max_tokens (OpenAI `finish_reason` "length", Anthropic `stop_reason`
"max_tokens") is an LLMError in all three uses: a cut answer, JSON object or list of tool calls
is never served as a complete one."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from thoth.config import LLMSettings
from thoth.errors import ThothError


class LLMError(ThothError):
    """The model call failed: timeout, connection, HTTP status, an empty reply or one the model
    cut at max_tokens."""

    code = "llm_failed"


def refuse_truncated(reason: str | None, truncated: str, max_tokens: int) -> None:
    if reason == truncated:
        raise LLMError(f"reply truncated at max_tokens={max_tokens} -> raise [llm].max_tokens")


@dataclass(frozen=True)
class ReplySchema:
    """The JSON schema a reply must follow, sent as the provider's structured output: OpenAI
    `response_format` json_schema, Anthropic a tool the model is forced to call. The schema is
    guidance for the model: the caller still validates the reply (non-strict on OpenAI, whose
    strict mode cannot express an open object such as a unit's kind-dependent `data`)."""

    name: str  # [A-Za-z0-9_-]{1,64}: both providers' rule for schema and tool names
    description: str
    schema: dict[str, Any]


class ChatClient(Protocol):
    name: str

    def complete_json(self, system: str, user: str, schema: ReplySchema | None = None) -> str:
        """The model's raw reply, expected to be one JSON object (following `schema`, when
        given, as far as the provider enforces it)."""
        ...


class TextClient(Protocol):
    name: str  # "<provider>:<model>"
    base_url: str  # where the calls go, for error messages

    def complete_text(self, system: str, user: str) -> str:
        """The model's plain-text reply to one system + user prompt."""
        ...


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: `parameters` is the JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]
    # OpenAI's strict mode: the provider holds the arguments to the schema (every property
    # required, no other). Anthropic takes the schema as it is.
    strict: bool = False


@dataclass(frozen=True)
class ToolCall:
    """One call the model made. `arguments` is None exactly when `error` says why the call
    carried no JSON object."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    error: str | None = None


@dataclass(frozen=True)
class ToolReply:
    text: str  # any prose the model wrote besides its calls
    calls: tuple[ToolCall, ...]
    tokens: int = 0  # prompt + completion tokens the provider reported for this call


@dataclass(frozen=True)
class ToolResult:
    """What one tool call returned, sent back to the model: `content` is text (JSON as text
    for structured results); `is_error` marks a refused or failed call."""

    call_id: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class Turn:
    """One earlier turn of a conversation: the model's reply and the results of its calls
    (one per call, in the order of the calls)."""

    reply: ToolReply
    results: tuple[ToolResult, ...]


class ToolClient(Protocol):
    name: str

    def call_tools(self, system: str, user: str, tools: Sequence[ToolSpec]) -> ToolReply:
        """The model's tool calls (and text) for one system + user prompt."""
        ...


class ConversationClient(Protocol):
    name: str

    def converse(
        self,
        system: str,
        user: str,
        turns: Sequence[Turn],
        tools: Sequence[ToolSpec],
        *,
        timeout: float | None = None,
        answer_only: bool = False,
    ) -> ToolReply:
        """The model's next reply after the user's prompt and the earlier `turns`: more tool
        calls, or text alone (its answer). `timeout`: this call's limit in seconds when it is
        shorter than [llm].timeout_seconds (a caller's own time budget). `answer_only`: the
        reply must be text — the tools stay listed (the turns refer to them) with the
        provider's tool choice "none" (OpenAI `tool_choice: "none"`, Anthropic
        `{"type": "none"}`), so the model cannot call one."""
        ...


def json_arguments(call: ToolCall) -> dict[str, Any]:
    """The arguments a call is sent back with: an unusable call's as an empty object (its
    result says why it was refused)."""
    return call.arguments if call.arguments is not None else {}


def tool_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"arguments are not valid JSON ({exc.msg} at column {exc.colno})"
    if not isinstance(value, dict):
        return None, f"arguments are a JSON {type(value).__name__}, not an object"
    return value, None


@contextmanager
def model_errors(sdk: Any, timeout: float) -> Iterator[None]:
    """One translation of both SDKs' failures (they share the exception names) into LLMError:
    a timeout, an HTTP status or an unreachable server, each said once, never retried."""
    try:
        yield
    except sdk.APITimeoutError as exc:
        raise LLMError(f"timed out after {timeout}s") from exc
    except sdk.APIStatusError as exc:
        raise LLMError(f"HTTP {exc.status_code} from the model server: {exc.message}") from exc
    except sdk.APIError as exc:
        raise LLMError(f"model server unreachable: {exc}") from exc


def call_timeout(settings: LLMSettings, timeout: float | None) -> float:
    """One call's limit: [llm].timeout_seconds, or the caller's shorter one."""
    if timeout is None:
        return settings.timeout_seconds
    return min(settings.timeout_seconds, timeout)


def sdk_options(settings: LLMSettings, api_key: str) -> dict[str, Any]:
    """What both SDK clients are built with: the server, the key, the timeout, no retries."""
    return {
        "base_url": settings.base_url,
        "api_key": api_key,
        "timeout": settings.timeout_seconds,
        "max_retries": 0,
    }
