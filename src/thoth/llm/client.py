"""The one place a chat model provider is chosen (`chat_client`, `text_client`, `tool_client`),
and the names every caller imports. The provider's client, and its SDK, are imported only when
`[llm]` asks for one."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from thoth.config import LLMSettings
from thoth.errors import ConfigError
from thoth.llm.base import (
    ChatClient,
    ConversationClient,
    LLMError,
    ReplySchema,
    TextClient,
    ToolCall,
    ToolClient,
    ToolReply,
    ToolResult,
    ToolSpec,
    Turn,
)

if TYPE_CHECKING:
    from thoth.llm.anthropic_chat import AnthropicChat
    from thoth.llm.openai_chat import OpenAIChat

__all__ = [
    "ChatClient",
    "ConversationClient",
    "LLMError",
    "ReplySchema",
    "TextClient",
    "ToolCall",
    "ToolClient",
    "ToolReply",
    "ToolResult",
    "ToolSpec",
    "Turn",
    "chat_client",
    "conversation_client",
    "text_client",
    "tool_client",
]


def _api_key(settings: LLMSettings) -> str:
    api_key = os.environ.get(settings.api_key_env)
    if not api_key:
        raise ConfigError(
            f"[llm].api_key_env names {settings.api_key_env}, which is not set -> export it "
            "(any non-empty value for a local server that ignores keys)"
        )
    return api_key


def _client(settings: LLMSettings) -> OpenAIChat | AnthropicChat:
    """The one place `[llm].provider` picks a client; every use below gets it from here. The
    provider's SDK is imported here, when a client is built: most commands never call a model
    and the SDKs take seconds to import."""
    api_key = _api_key(settings)
    if settings.provider == "anthropic":
        from thoth.llm.anthropic_chat import AnthropicChat

        return AnthropicChat(settings, api_key)
    from thoth.llm.openai_chat import OpenAIChat

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
