"""Chat model providers. `chat_client(settings)` and `tool_client(settings)` are the places a
provider is chosen."""

from thoth.llm.client import (
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
    chat_client,
    conversation_client,
    text_client,
    tool_client,
)

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
