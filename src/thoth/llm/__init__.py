"""Chat model providers. `chat_client(settings)` is the one place a provider is chosen."""

from thoth.llm.client import ChatClient, LLMError, chat_client

__all__ = ["ChatClient", "LLMError", "chat_client"]
