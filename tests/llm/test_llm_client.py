"""The chat clients against a real local model server (tests/fake_llm.py) with the real SDKs:
a reply the model cut at max_tokens is an error, never served as a complete one."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.fake_llm import FakeLLMServer, ToolCallScript
from thoth.config import LLMSettings
from thoth.llm.anthropic_chat import AnthropicChat
from thoth.llm.client import LLMError, ReplySchema, ToolCall, ToolReply, ToolResult, ToolSpec, Turn
from thoth.llm.openai_chat import OpenAIChat

MAX_TOKENS = 123
TRUNCATED = {"openai": "length", "anthropic": "max_tokens"}
TOOL = ToolSpec("propose", "Propose one thing.", {"type": "object", "properties": {}})
SCHEMA = ReplySchema(
    "answer",
    "The answer as one object.",
    {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
)


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def client(server: FakeLLMServer, provider: str) -> OpenAIChat | AnthropicChat:
    settings = LLMSettings.model_validate(
        {
            "provider": provider,
            "base_url": server.url + "/v1" if provider == "openai" else server.url,
            "model": "fake-model",
            "max_tokens": MAX_TOKENS,
        }
    )
    if provider == "anthropic":
        return AnthropicChat(settings, "test-key")
    return OpenAIChat(settings, "test-key")


CALLS: dict[str, Callable[[OpenAIChat | AnthropicChat], Any]] = {
    "complete_text": lambda c: c.complete_text("system", "user"),
    "complete_json": lambda c: c.complete_json("system", "user"),
    "complete_json_schema": lambda c: c.complete_json("system", "user", SCHEMA),
    "call_tools": lambda c: c.call_tools("system", "user", [TOOL]),
}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("method", sorted(CALLS))
def test_a_reply_cut_at_max_tokens_is_an_error(
    llm: FakeLLMServer, provider: str, method: str
) -> None:
    reason = TRUNCATED[provider]
    if method == "call_tools":
        llm.reply_tool_calls(ToolCallScript("propose", {}), finish_reason=reason)
    elif method == "complete_json_schema" and provider == "anthropic":
        llm.reply_tool_calls(ToolCallScript("answer", {"ok": True}), finish_reason=reason)
    else:
        llm.reply('{"partial": "a reply that stops in the mid', finish_reason=reason)
    with pytest.raises(LLMError, match=r"truncated at max_tokens=123 -> raise \[llm\]\.max_tokens"):
        CALLS[method](client(llm, provider))
    assert len(llm.requests) == 1  # no retry


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_reply_that_ends_normally_is_served(llm: FakeLLMServer, provider: str) -> None:
    chat = client(llm, provider)
    llm.reply("a complete reply")
    assert chat.complete_text("system", "user") == "a complete reply"
    llm.reply('{"ok": true}')
    assert chat.complete_json("system", "user") == '{"ok": true}'
    llm.reply_tool_calls(ToolCallScript("propose", {"a": 1}))
    assert [c.arguments for c in chat.call_tools("system", "user", [TOOL]).calls] == [{"a": 1}]


def test_a_reply_schema_is_sent_as_openai_structured_output(llm: FakeLLMServer) -> None:
    llm.reply('{"ok": true}')
    assert client(llm, "openai").complete_json("system", "user", SCHEMA) == '{"ok": true}'
    [request] = llm.requests
    assert request.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "answer",
            "description": "The answer as one object.",
            "schema": SCHEMA.schema,
            "strict": False,
        },
    }


def test_a_reply_schema_goes_as_a_json_object_with_its_schema_where_configured(
    llm: FakeLLMServer,
) -> None:
    """llama-cpp-python's server refuses `json_schema` (HTTP 500, found against the real
    server) and takes the schema inside `json_object`: `[llm].structured_output` says which."""
    settings = LLMSettings.model_validate(
        {"base_url": llm.url + "/v1", "model": "m", "structured_output": "json_object"}
    )
    llm.reply('{"ok": true}')
    assert OpenAIChat(settings, "k").complete_json("system", "user", SCHEMA) == '{"ok": true}'
    [request] = llm.requests
    assert request.body["response_format"] == {"type": "json_object", "schema": SCHEMA.schema}


def test_a_reply_schema_is_an_anthropic_forced_tool(llm: FakeLLMServer) -> None:
    llm.reply_tool_calls(ToolCallScript("answer", {"ok": True}), text="here it is")
    assert client(llm, "anthropic").complete_json("system", "user", SCHEMA) == '{"ok": true}'
    [request] = llm.requests
    assert request.body["tools"] == [
        {
            "name": "answer",
            "description": "The answer as one object.",
            "input_schema": SCHEMA.schema,
        }
    ]
    assert request.body["tool_choice"] == {"type": "tool", "name": "answer"}


@pytest.mark.parametrize(
    "calls",
    [(), (ToolCallScript("other", {"ok": True}),)],
    ids=["no call", "another tool"],
)
def test_an_anthropic_reply_without_the_forced_call_is_an_error(
    llm: FakeLLMServer, calls: tuple[ToolCallScript, ...]
) -> None:
    if calls:
        llm.reply_tool_calls(*calls)
    else:
        llm.reply('{"ok": true}')
    with pytest.raises(LLMError, match="the model did not call the tool answer"):
        client(llm, "anthropic").complete_json("system", "user", SCHEMA)
    assert len(llm.requests) == 1


# ---------------------------------------------------------------------- conversations


def _conversation_turn(provider: str) -> Turn:
    first = ToolReply(
        text="Let me look.",
        calls=(ToolCall("call_a", "wiki_read", {"path": "mercati/giappone.md"}),),
    )
    return Turn(first, (ToolResult("call_a", '{"error": "outside"}', is_error=True),))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_converse_sends_earlier_calls_and_results_in_the_wire_format(
    llm: FakeLLMServer, provider: str
) -> None:
    llm.reply("The answer.")
    reply = client(llm, provider).converse("system", "user", [_conversation_turn(provider)], [TOOL])
    assert reply.text == "The answer." and reply.calls == () and reply.tokens == 2
    messages = llm.requests[0].body["messages"]
    if provider == "openai":
        assert messages[:2] == [
            {"role": "system", "content": "system"},
            {"role": "user", "content": "user"},
        ]
        assistant, tool = messages[2:]
        assert assistant["role"] == "assistant" and assistant["content"] == "Let me look."
        [call] = assistant["tool_calls"]
        assert call["id"] == "call_a" and call["function"]["name"] == "wiki_read"
        assert json.loads(call["function"]["arguments"]) == {"path": "mercati/giappone.md"}
        assert tool == {"role": "tool", "tool_call_id": "call_a", "content": '{"error": "outside"}'}
    else:
        assert llm.requests[0].body["system"] == "system"
        user, assistant, results = messages
        assert user == {"role": "user", "content": "user"}
        assert assistant == {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool_use",
                    "id": "call_a",
                    "name": "wiki_read",
                    "input": {"path": "mercati/giappone.md"},
                },
            ],
        }
        assert results == {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_a",
                    "content": '{"error": "outside"}',
                    "is_error": True,
                }
            ],
        }


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_converse_returns_the_next_tool_calls(llm: FakeLLMServer, provider: str) -> None:
    llm.reply_tool_calls(ToolCallScript("wiki_list", {}, id="c2"))
    reply = client(llm, provider).converse("system", "user", [_conversation_turn(provider)], [TOOL])
    assert reply.calls == (ToolCall("c2", "wiki_list", {}),)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_conversation_reply_cut_at_max_tokens_is_an_error(
    llm: FakeLLMServer, provider: str
) -> None:
    llm.reply("half an ans", finish_reason=TRUNCATED[provider])
    with pytest.raises(LLMError, match="truncated"):
        client(llm, provider).converse("system", "user", [], [TOOL])


def test_an_earlier_call_without_text_is_sent_with_an_empty_string_not_null(
    llm: FakeLLMServer,
) -> None:
    """OpenAI takes a null content beside tool calls; llama-cpp-python's server refuses it
    with HTTP 500 (found against the real server, issue 26): Thoth sends a string."""
    llm.reply("The answer.")
    silent = Turn(
        ToolReply(text="", calls=(ToolCall("call_a", "wiki_list", {}),)),
        (ToolResult("call_a", "[]"),),
    )
    client(llm, "openai").converse("system", "user", [silent], [TOOL])
    assistant = llm.requests[0].body["messages"][2]
    assert assistant["role"] == "assistant" and assistant["content"] == ""
    assert llm.requests[0].body["tool_choice"] == "auto"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_answer_only_turn_refuses_tools_in_the_wire_format_and_gets_text(
    llm: FakeLLMServer, provider: str
) -> None:
    """The fake answers a tool-call script with its text only when the request refuses tools
    in the provider's own shape (issue 46, point 7)."""
    for _ in range(2):
        llm.reply_tool_calls(ToolCallScript("wiki_list", {}, id="c2"), text_when_refused="Done.")
    turns = [_conversation_turn(provider)]
    chat = client(llm, provider)
    free = chat.converse("system", "user", turns, [TOOL])
    answer = chat.converse("system", "user", turns, [TOOL], answer_only=True)
    assert free.calls == (ToolCall("c2", "wiki_list", {}),) and free.text == ""
    assert answer.text == "Done." and answer.calls == ()
    first, second = (r.body for r in llm.requests)
    assert first.get("tool_choice") == ("auto" if provider == "openai" else None)
    assert second["tool_choice"] == ("none" if provider == "openai" else {"type": "none"})
    assert second["tools"] == first["tools"]  # still listed: the turns name them
