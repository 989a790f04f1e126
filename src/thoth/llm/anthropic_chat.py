"""The client of Anthropic's messages API (the `anthropic` SDK)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import anthropic
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
)

# Why a reply stopped when it ran out of tokens: refused, never served as complete.
_ANTHROPIC_TRUNCATED = "max_tokens"


class AnthropicChat:
    def __init__(self, settings: LLMSettings, api_key: str) -> None:
        self.name = f"anthropic:{settings.model}"
        self._settings = settings
        self._client = anthropic.Anthropic(**sdk_options(settings, api_key))
        self.base_url = str(self._client.base_url)

    def _create(
        self,
        system: str,
        user: str,
        *,
        tools: Sequence[ToolUnionParam] | anthropic.Omit = anthropic.omit,
        tool_choice: ToolChoiceParam | anthropic.Omit = anthropic.omit,
        timeout: float | None = None,
        history: Sequence[MessageParam] = (),
    ) -> Message:
        """One message for a system + user prompt and the `history` after it (capped at
        max_tokens, refused when cut there), with tools when given; SDK failures become
        LLMError."""
        seconds = call_timeout(self._settings, timeout)
        with model_errors(anthropic, seconds):
            messages: list[MessageParam] = [{"role": "user", "content": user}, *history]
            reply = self._client.messages.create(
                model=self._settings.model,
                system=system,
                messages=messages,
                tools=tools,
                tool_choice=tool_choice,
                max_tokens=self._settings.max_tokens,
                timeout=seconds,
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
        self,
        system: str,
        user: str,
        turns: Sequence[Turn],
        tools: Sequence[ToolSpec],
        *,
        timeout: float | None = None,
        answer_only: bool = False,
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
                    "input": json_arguments(call),
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
        # "none": the tools stay listed (the history's tool_use blocks name them), none is called.
        choice: ToolChoiceParam | anthropic.Omit = (
            {"type": "none"} if answer_only else anthropic.omit
        )
        reply = self._create(
            system, user, tools=offered, tool_choice=choice, history=history, timeout=timeout
        )
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
        refuse_truncated(stop_reason, _ANTHROPIC_TRUNCATED, self._settings.max_tokens)
