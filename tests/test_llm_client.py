"""The chat clients against a real local model server (tests/fake_llm.py) with the real SDKs:
a reply the model cut at max_tokens is an error, never served as a complete one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.fake_llm import FakeLLMServer, ToolCallScript
from thoth.config import LLMSettings
from thoth.llm.client import AnthropicChat, LLMError, OpenAIChat, ToolSpec

MAX_TOKENS = 123
TRUNCATED = {"openai": "length", "anthropic": "max_tokens"}
TOOL = ToolSpec("propose", "Propose one thing.", {"type": "object", "properties": {}})


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
