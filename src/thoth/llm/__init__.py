"""Chat model providers. `chat_client(settings)` and `tool_client(settings)` are the places a
provider is chosen."""

from thoth.llm.client import (
    ChatClient,
    LLMError,
    ReplySchema,
    TextClient,
    ToolCall,
    ToolClient,
    ToolReply,
    ToolSpec,
    chat_client,
    text_client,
    tool_client,
)

__all__ = [
    "ChatClient",
    "LLMError",
    "ReplySchema",
    "TextClient",
    "ToolCall",
    "ToolClient",
    "ToolReply",
    "ToolSpec",
    "chat_client",
    "text_client",
    "tool_client",
]
