"""The client of OpenAI-compatible chat completion servers (the `openai` SDK)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal, cast

import openai
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
from thoth.llm.base import (
    LLMError,
    ReplySchema,
    ToolCall,
    ToolReply,
    ToolSpec,
    Turn,
    call_timeout,
    json_arguments,
    model_errors,
    refuse_truncated,
    sdk_options,
    tool_arguments,
)

# Why a reply stopped when it ran out of tokens: refused, never served as complete.
_OPENAI_TRUNCATED = "length"


class OpenAIChat:
    def __init__(self, settings: LLMSettings, api_key: str) -> None:
        self.name = f"openai:{settings.model}"
        self._settings = settings
        self._client = openai.OpenAI(**sdk_options(settings, api_key))
        self.base_url = str(self._client.base_url)

    def _create(
        self,
        system: str,
        user: str,
        *,
        response_format: completion_create_params.ResponseFormat | openai.Omit = openai.omit,
        tools: Sequence[ChatCompletionToolUnionParam] | openai.Omit = openai.omit,
        answer_only: bool = False,
        timeout: float | None = None,
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
        # "auto", OpenAI's default with tools, said explicitly: llama-cpp-python's server reads
        # a request without tool_choice as one without tools, and never calls. "none": the
        # tools stay listed (the history's calls name them) and none is called.
        choice: Literal["none", "auto"] | openai.Omit = (
            openai.omit if isinstance(tools, openai.Omit) else "none" if answer_only else "auto"
        )
        seconds = call_timeout(self._settings, timeout)
        with model_errors(openai, seconds):
            return self._client.chat.completions.create(
                model=self._settings.model,
                messages=messages,
                response_format=response_format,
                tools=tools,
                tool_choice=choice,
                temperature=0,
                max_tokens=self._settings.max_tokens,
                timeout=seconds,
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
        response_format: ResponseFormatJSONObject | ResponseFormatJSONSchema
        if schema is None:
            response_format = {"type": "json_object"}
        elif self._settings.structured_output == "json_object":
            # llama-cpp-python's extension: the schema constrains a json_object reply.
            response_format = cast(
                ResponseFormatJSONObject, {"type": "json_object", "schema": schema.schema}
            )
        else:
            response_format = {
                "type": "json_schema",
                "json_schema": {
                    "name": schema.name,
                    "description": schema.description,
                    "schema": schema.schema,
                    "strict": False,
                },
            }
        try:
            reply = self._create(system, user, response_format=response_format)
        except LLMError as exc:
            if response_format["type"] != "json_schema" or "json_schema" not in str(exc):
                raise
            raise LLMError(
                f"{exc} -> this server refuses response_format json_schema: if it takes the "
                "schema inside json_object (llama-cpp-python), set [llm].structured_output = "
                '"json_object"'
            ) from exc
        # An empty text is returned: the caller says it is not the JSON object asked for.
        return self._content(reply, empty_ok=True)

    def call_tools(self, system: str, user: str, tools: Sequence[ToolSpec]) -> ToolReply:
        return self.converse(system, user, (), tools)

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
                        "arguments": json.dumps(json_arguments(call), ensure_ascii=False),
                    },
                }
                for call in turn.reply.calls
            ]
            assistant: ChatCompletionAssistantMessageParam = {
                "role": "assistant",
                # A string even when empty: OpenAI takes null beside tool calls, but
                # llama-cpp-python's server refuses it (HTTP 500, "should be a valid string").
                "content": turn.reply.text,
            }
            if sent:
                assistant["tool_calls"] = sent
            history.append(assistant)
            history += [
                {"role": "tool", "tool_call_id": r.call_id, "content": r.content}
                for r in turn.results
            ]
        reply = self._create(
            system,
            user,
            tools=offered,
            answer_only=answer_only,
            history=history,
            timeout=timeout,
        )
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
            arguments, error = tool_arguments(call.function.arguments)
            calls.append(ToolCall(call.id, call.function.name, arguments, error))
        tokens = reply.usage.total_tokens if reply.usage is not None else 0
        return ToolReply(text=message.content or "", calls=tuple(calls), tokens=tokens)

    def _refuse_truncated(self, finish_reason: str | None) -> None:
        refuse_truncated(finish_reason, _OPENAI_TRUNCATED, self._settings.max_tokens)
