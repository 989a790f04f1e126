"""Anthropic's Messages wire format on recorded replies (issue 26, point 3): no Anthropic server
runs offline, so the documented request/response pairs of tests/llm/recorded/ stand in for it.
A local HTTP server sends each documented response byte for byte; the real `anthropic` SDK
and Thoth's client read it. What is checked: Thoth's request has the documented shape
(headers, fields, tools, forced tool_choice), every documented reply is parsed (text, a text
block before a tool_use, usage with cache fields), a reply cut at max_tokens is refused, and
each documented error status becomes one LLMError naming the status and the server's message,
never a retry."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_http import JsonHandler, LocalHTTPFake
from thoth.config import LLMSettings
from thoth.llm.anthropic_chat import AnthropicChat
from thoth.llm.client import LLMError, ReplySchema, ToolSpec

RECORDED = json.loads(
    (Path(__file__).parent / "recorded" / "anthropic_messages.json").read_text("utf-8")
)["exchanges"]


class _Handler(JsonHandler):
    def do_POST(self) -> None:
        _raw, body = self.read_json()
        server: RecordedServer = self.server.fake
        server.requests.append((self.path, self.headers_dict(), body))
        status, response = server.replies.pop(0)
        self.send_text(status, json.dumps(response))


class RecordedServer(LocalHTTPFake):
    """Serves the queued recorded responses in order; keeps (path, headers, body) of each
    request."""

    def __init__(self) -> None:
        super().__init__(_Handler, "anthropic-recorded")
        self.replies: list[tuple[int, dict[str, Any]]] = []
        self.requests: list[tuple[str, dict[str, str], Any]] = []

    def queue(self, exchange: dict[str, Any]) -> None:
        self.replies.append((exchange["status"], exchange["response"]))


@pytest.fixture
def server() -> Iterator[RecordedServer]:
    with RecordedServer() as s:
        yield s


def client(server: RecordedServer, model: str = "claude-opus-4-5") -> AnthropicChat:
    settings = LLMSettings.model_validate(
        {
            "provider": "anthropic",
            "base_url": f"http://127.0.0.1:{server.port}",
            "model": model,
            "max_tokens": 1024,
        }
    )
    return AnthropicChat(settings, "sk-ant-test")


def documented_tool(exchange: dict[str, Any]) -> ToolSpec:
    [tool] = exchange["request"]["tools"]
    return ToolSpec(tool["name"], tool["description"], tool["input_schema"])


def test_a_text_reply_is_read_and_the_request_has_the_documented_shape(
    server: RecordedServer,
) -> None:
    exchange = RECORDED["text"]
    server.queue(exchange)
    assert client(server).complete_text("Be brief.", "Hello, Claude") == "Hi! My name is Claude."
    [(path, headers, body)] = server.requests
    assert path == "/v1/messages"
    # The key in one of the two documented forms (the SDK of this install sends the Bearer
    # one), and an API version: the SDK pins its own date, which a server may refuse.
    assert headers.get("x-api-key") == "sk-ant-test" or (
        headers.get("authorization") == "Bearer sk-ant-test"
    )
    assert headers["anthropic-version"]
    documented = exchange["request"]
    assert body["model"] == documented["model"] and body["max_tokens"] == documented["max_tokens"]
    assert body["messages"] == documented["messages"]
    assert body["system"] == "Be brief."  # Messages takes the system prompt apart, not as a turn


def test_a_tool_use_reply_after_a_text_block_is_parsed_with_its_usage(
    server: RecordedServer,
) -> None:
    exchange = RECORDED["tool_use"]
    server.queue(exchange)
    reply = client(server).call_tools(
        "Use the tools.", exchange["request"]["messages"][0]["content"], [documented_tool(exchange)]
    )
    [call] = reply.calls
    assert (call.id, call.name, call.error) == (
        "toolu_01A09q90qw90lq917835lq9",
        "get_weather",
        None,
    )
    assert call.arguments == {"location": "San Francisco, CA", "unit": "celsius"}
    assert reply.text == "I'll check the current weather in San Francisco for you."
    assert reply.tokens == 384 + 87
    [(_, _, body)] = server.requests
    assert body["tools"] == exchange["request"]["tools"]  # the documented tool shape, as is
    assert body["messages"] == exchange["request"]["messages"]


def test_a_reply_schema_is_the_documented_forced_tool(server: RecordedServer) -> None:
    exchange = RECORDED["forced_tool"]
    server.queue(exchange)
    tool = RECORDED["tool_use"]["request"]["tools"][0]
    schema = ReplySchema(tool["name"], tool["description"], tool["input_schema"])
    got = client(server).complete_json("Reply with the call.", "San Francisco?", schema)
    assert json.loads(got) == {"location": "San Francisco, CA"}
    [(_, _, body)] = server.requests
    assert body["tool_choice"] == exchange["request"]["tool_choice"]


def test_a_documented_text_reply_with_cache_usage_fields_is_read(server: RecordedServer) -> None:
    """The reference's usage carries cache and service-tier fields the older replies lack: the
    turn's tokens are input + output."""
    server.queue(RECORDED["text"])
    tool = ToolSpec("noop", "Does nothing.", {"type": "object", "properties": {}})
    reply = client(server).call_tools("s", "Hello, Claude", [tool])
    assert reply.calls == () and reply.text == "Hi! My name is Claude."
    assert reply.tokens == 2095 + 503


def test_a_reply_cut_at_max_tokens_is_refused(server: RecordedServer) -> None:
    server.queue(RECORDED["max_tokens"])
    with pytest.raises(LLMError, match="max_tokens"):
        client(server).complete_text("s", "Tell me the history of Rome.")


@pytest.mark.parametrize(
    "exchange", RECORDED["errors"], ids=[e["response"]["error"]["type"] for e in RECORDED["errors"]]
)
def test_each_documented_error_is_one_llm_error_naming_status_and_message(
    server: RecordedServer, exchange: dict[str, Any]
) -> None:
    server.queue(exchange)
    with pytest.raises(LLMError) as caught:
        client(server).complete_text("s", "Hello, Claude")
    message = str(caught.value)
    assert f"HTTP {exchange['status']}" in message
    assert exchange["response"]["error"]["message"] in message
    assert len(server.requests) == 1  # never retried (429 and 529 included)
