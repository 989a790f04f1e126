"""Chat completion clients for OpenAI-compatible servers and Anthropic, with no automatic
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
`tool_result` blocks), so the model can call tools again or answer in text.

A reply the model cut at max_tokens (OpenAI `finish_reason` "length", Anthropic `stop_reason`
"max_tokens") is an LLMError in all three uses: a cut answer, JSON object or list of tool calls
is never served as a complete one."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import anthropic
import openai
from anthropic.types import (
    Message,
    MessageParam,
    TextBlock,
    TextBlockParam,
    ToolChoiceParam,
    ToolParam,
    ToolResultBlockParam,
    ToolUnionParam,
    ToolUseBlock,
    ToolUseBlockParam,
)
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionAssistantMessageParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
    ChatCompletionToolUnionParam,
    completion_create_params,
)
from openai.types.shared_params import (
    FunctionDefinition,
    ResponseFormatJSONObject,
    ResponseFormatJSONSchema,
)

from thoth.config import LLMSettings
from thoth.errors import ConfigError, ThothError


class LLMError(ThothError):
    """The model call failed: timeout, connection, HTTP status, an empty reply or one the model
    cut at max_tokens."""

    code = "llm_failed"


# Why a reply stopped, when it stopped because it ran out of tokens: what it says is cut short,
# a truncated JSON object, tool calls or answer. Refused, never served as complete.
_OPENAI_TRUNCATED = "length"
_ANTHROPIC_TRUNCATED = "max_tokens"


def _refuse_truncated(reason: str | None, truncated: str, max_tokens: int) -> None:
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
        self, system: str, user: str, turns: Sequence[Turn], tools: Sequence[ToolSpec]
    ) -> ToolReply:
        """The model's next reply after the user's prompt and the earlier `turns`: more tool
        calls, or text alone (its answer)."""
        ...


def _json_arguments(call: ToolCall) -> dict[str, Any]:
    """The arguments a call is sent back with: an unusable call's as an empty object (its
    result says why it was refused)."""
    return call.arguments if call.arguments is not None else {}


def _arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"arguments are not valid JSON ({exc.msg} at column {exc.colno})"
    if not isinstance(value, dict):
        return None, f"arguments are a JSON {type(value).__name__}, not an object"
    return value, None


@contextmanager
def _model_errors(sdk: Any, timeout: float) -> Iterator[None]:
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


def _sdk_options(settings: LLMSettings, api_key: str) -> dict[str, Any]:
    """What both SDK clients are built with: the server, the key, the timeout, no retries."""
    return {
        "base_url": settings.base_url,
        "api_key": api_key,
        "timeout": settings.timeout_seconds,
        "max_retries": 0,
    }


class OpenAIChat:
    def __init__(self, settings: LLMSettings, api_key: str) -> None:
        self.name = f"openai:{settings.model}"
        self._settings = settings
        self._client = openai.OpenAI(**_sdk_options(settings, api_key))
        self.base_url = str(self._client.base_url)

    def _create(
        self,
        system: str,
        user: str,
        *,
        response_format: completion_create_params.ResponseFormat | openai.Omit = openai.omit,
        tools: Sequence[ChatCompletionToolUnionParam] | openai.Omit = openai.omit,
        history: Sequence[ChatCompletionMessageParam] = (),
    ) -> ChatCompletion:
        """One chat completion for a system + user prompt and the `history` after them
        (deterministic, capped at max_tokens), with a response format or tools when given;
        SDK failures become LLMError."""
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
            *history,
        ]
        with _model_errors(openai, self._settings.timeout_seconds):
            return self._client.chat.completions.create(
                model=self._settings.model,
                messages=messages,
                response_format=response_format,
                tools=tools,
                temperature=0,
                max_tokens=self._settings.max_tokens,
            )

    def _content(self, reply: ChatCompletion, *, empty_ok: bool) -> str:
        """The reply's text, refused when cut at max_tokens or missing (an empty text is
        missing unless `empty_ok`)."""
        if reply.choices:
            self._refuse_truncated(reply.choices[0].finish_reason)
        content = reply.choices[0].message.content if reply.choices else None
        if content is None or not (content or empty_ok):
            raise LLMError("the model returned no content")
        return content

    def complete_text(self, system: str, user: str) -> str:
        return self._content(self._create(system, user), empty_ok=False)

    def complete_json(self, system: str, user: str, schema: ReplySchema | None = None) -> str:
        response_format: ResponseFormatJSONObject | ResponseFormatJSONSchema = (
            {"type": "json_object"}
            if schema is None
            else {
                "type": "json_schema",
                "json_schema": {
                    "name": schema.name,
                    "description": schema.description,
                    "schema": schema.schema,
                    "strict": False,
                },
            }
        )
        # An empty text is returned: the caller says it is not the JSON object asked for.
        reply = self._create(system, user, response_format=response_format)
        return self._content(reply, empty_ok=True)

    def call_tools(self, system: str, user: str, tools: Sequence[ToolSpec]) -> ToolReply:
        return self.converse(system, user, (), tools)

    def converse(
        self, system: str, user: str, turns: Sequence[Turn], tools: Sequence[ToolSpec]
    ) -> ToolReply:
        offered: list[ChatCompletionFunctionToolParam] = []
        for t in tools:
            function: FunctionDefinition = {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            }
            if t.strict:
                function["strict"] = True
            offered.append({"type": "function", "function": function})
        history: list[ChatCompletionMessageParam] = []
        for turn in turns:
            sent: list[ChatCompletionMessageFunctionToolCallParam] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": json.dumps(_json_arguments(call), ensure_ascii=False),
                    },
                }
                for call in turn.reply.calls
            ]
            assistant: ChatCompletionAssistantMessageParam = {
                "role": "assistant",
                "content": turn.reply.text or None,
            }
            if sent:
                assistant["tool_calls"] = sent
            history.append(assistant)
            history += [
                {"role": "tool", "tool_call_id": r.call_id, "content": r.content}
                for r in turn.results
            ]
        reply = self._create(system, user, tools=offered, history=history)
        if not reply.choices:
            raise LLMError("the model returned no choices")
        self._refuse_truncated(reply.choices[0].finish_reason)
        message = reply.choices[0].message
        calls = []
        for call in message.tool_calls or []:
            if call.type != "function":
                calls.append(
                    ToolCall(call.id, "", None, f"a {call.type} tool call, not a function call")
                )
                continue
            arguments, error = _arguments(call.function.arguments)
            calls.append(ToolCall(call.id, call.function.name, arguments, error))
        tokens = reply.usage.total_tokens if reply.usage is not None else 0
        return ToolReply(text=message.content or "", calls=tuple(calls), tokens=tokens)

    def _refuse_truncated(self, finish_reason: str | None) -> None:
        _refuse_truncated(finish_reason, _OPENAI_TRUNCATED, self._settings.max_tokens)


class AnthropicChat:
    def __init__(self, settings: LLMSettings, api_key: str) -> None:
        self.name = f"anthropic:{settings.model}"
        self._settings = settings
        self._client = anthropic.Anthropic(**_sdk_options(settings, api_key))
        self.base_url = str(self._client.base_url)

    def _create(
        self,
        system: str,
        user: str,
        *,
        tools: Sequence[ToolUnionParam] | anthropic.Omit = anthropic.omit,
        tool_choice: ToolChoiceParam | anthropic.Omit = anthropic.omit,
        history: Sequence[MessageParam] = (),
    ) -> Message:
        """One message for a system + user prompt and the `history` after it (capped at
        max_tokens, refused when cut there), with tools when given; SDK failures become
        LLMError."""
        with _model_errors(anthropic, self._settings.timeout_seconds):
            messages: list[MessageParam] = [{"role": "user", "content": user}, *history]
            reply = self._client.messages.create(
                model=self._settings.model,
                system=system,
                messages=messages,
                tools=tools,
                tool_choice=tool_choice,
                max_tokens=self._settings.max_tokens,
            )
        self._refuse_truncated(reply.stop_reason)
        return reply

    def complete_text(self, system: str, user: str) -> str:
        # complete_json asks for nothing JSON-specific on Anthropic: the same call serves both.
        return self.complete_json(system, user)

    def complete_json(self, system: str, user: str, schema: ReplySchema | None = None) -> str:
        if schema is not None:
            return self._forced_tool(system, user, schema)
        reply = self._create(system, user)
        texts = [b.text for b in reply.content if isinstance(b, TextBlock)]
        if not texts:
            raise LLMError("the model returned no text block")
        return "".join(texts)

    def _forced_tool(self, system: str, user: str, schema: ReplySchema) -> str:
        """Structured output on Anthropic: one tool whose input schema is the reply schema,
        and a tool_choice that forces the model to call it; its input is the reply."""
        tool: ToolParam = {
            "name": schema.name,
            "description": schema.description,
            "input_schema": schema.schema,
        }
        reply = self._create(
            system, user, tools=[tool], tool_choice={"type": "tool", "name": schema.name}
        )
        for block in reply.content:
            if isinstance(block, ToolUseBlock) and block.name == schema.name:
                # The SDK does not validate replies: the caller checks what `input` holds.
                given: object = block.input
                return json.dumps(given, ensure_ascii=False)
        raise LLMError(
            f"the model did not call the tool {schema.name} it was forced to call -> check "
            "that [llm] names a model with tool use"
        )

    def call_tools(self, system: str, user: str, tools: Sequence[ToolSpec]) -> ToolReply:
        return self.converse(system, user, (), tools)

    def converse(
        self, system: str, user: str, turns: Sequence[Turn], tools: Sequence[ToolSpec]
    ) -> ToolReply:
        offered: list[ToolParam] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ]
        history: list[MessageParam] = []
        for turn in turns:
            blocks: list[TextBlockParam | ToolUseBlockParam] = []
            if turn.reply.text:
                blocks.append({"type": "text", "text": turn.reply.text})
            blocks += [
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": _json_arguments(call),
                }
                for call in turn.reply.calls
            ]
            history.append({"role": "assistant", "content": blocks})
            if turn.results:
                results: list[ToolResultBlockParam] = [
                    {
                        "type": "tool_result",
                        "tool_use_id": r.call_id,
                        "content": r.content,
                        "is_error": r.is_error,
                    }
                    for r in turn.results
                ]
                history.append({"role": "user", "content": results})
        reply = self._create(system, user, tools=offered, history=history)
        texts, calls = [], []
        for block in reply.content:
            if isinstance(block, TextBlock):
                texts.append(block.text)
            elif isinstance(block, ToolUseBlock):
                # The SDK does not validate replies: `input` is whatever the server sent.
                given: object = block.input
                if isinstance(given, dict):
                    calls.append(ToolCall(block.id, block.name, dict(given)))
                else:
                    error = f"input is a JSON {type(given).__name__}, not an object"
                    calls.append(ToolCall(block.id, block.name, None, error))
        tokens = reply.usage.input_tokens + reply.usage.output_tokens
        return ToolReply(text="".join(texts), calls=tuple(calls), tokens=tokens)

    def _refuse_truncated(self, stop_reason: str | None) -> None:
        _refuse_truncated(stop_reason, _ANTHROPIC_TRUNCATED, self._settings.max_tokens)


def _api_key(settings: LLMSettings) -> str:
    api_key = os.environ.get(settings.api_key_env)
    if not api_key:
        raise ConfigError(
            f"[llm].api_key_env names {settings.api_key_env}, which is not set -> export it "
            "(any non-empty value for a local server that ignores keys)"
        )
    return api_key


def _client(settings: LLMSettings) -> OpenAIChat | AnthropicChat:
    """The one place `[llm].provider` picks a client; every use below gets it from here."""
    api_key = _api_key(settings)
    if settings.provider == "anthropic":
        return AnthropicChat(settings, api_key)
    return OpenAIChat(settings, api_key)


def chat_client(settings: LLMSettings) -> ChatClient:
    return _client(settings)


def text_client(settings: LLMSettings) -> TextClient:
    """The plain-text client `[llm]` asks for (grounded answers)."""
    return _client(settings)


def tool_client(settings: LLMSettings) -> ToolClient:
    """The tool-calling client `[llm]` asks for (a session's driver)."""
    return _client(settings)


def conversation_client(settings: LLMSettings) -> ConversationClient:
    """The multi-turn tool-calling client `[llm]` asks for (the deep-analysis agent)."""
    return _client(settings)
