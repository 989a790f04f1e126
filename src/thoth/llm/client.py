"""Chat completion clients for OpenAI-compatible servers and Anthropic, with no automatic
retries: a failure is reported once, attributed, and never hidden behind a second attempt."""

from __future__ import annotations

import os
from typing import Protocol

import anthropic
import openai
from anthropic.types import MessageParam, TextBlock

from thoth.config import LLMSettings
from thoth.errors import ConfigError


class LLMError(Exception):
    """The model call failed: timeout, connection, HTTP status or an empty reply."""


class ChatClient(Protocol):
    name: str

    def complete_json(self, system: str, user: str) -> str:
        """The model's raw text reply, which is expected to be one JSON object."""
        ...


class OpenAIChat:
    def __init__(self, settings: LLMSettings, api_key: str) -> None:
        self.name = f"openai:{settings.model}"
        self._settings = settings
        self._client = openai.OpenAI(
            base_url=settings.base_url,
            api_key=api_key,
            timeout=settings.timeout_seconds,
            max_retries=0,
        )

    def complete_json(self, system: str, user: str) -> str:
        try:
            reply = self._client.chat.completions.create(
                model=self._settings.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                response_format={"type": "json_object"},
                temperature=0,
                max_tokens=self._settings.max_tokens,
            )
        except openai.APITimeoutError as exc:
            raise LLMError(f"timed out after {self._settings.timeout_seconds}s") from exc
        except openai.APIStatusError as exc:
            raise LLMError(f"HTTP {exc.status_code} from the model server: {exc.message}") from exc
        except openai.APIError as exc:
            raise LLMError(f"model server unreachable: {exc}") from exc
        if not reply.choices or reply.choices[0].message.content is None:
            raise LLMError("the model returned no content")
        return reply.choices[0].message.content


class AnthropicChat:
    def __init__(self, settings: LLMSettings, api_key: str) -> None:
        self.name = f"anthropic:{settings.model}"
        self._settings = settings
        self._client = anthropic.Anthropic(
            base_url=settings.base_url,
            api_key=api_key,
            timeout=settings.timeout_seconds,
            max_retries=0,
        )

    def complete_json(self, system: str, user: str) -> str:
        try:
            messages: list[MessageParam] = [{"role": "user", "content": user}]
            reply = self._client.messages.create(
                model=self._settings.model,
                system=system,
                messages=messages,
                max_tokens=self._settings.max_tokens,
            )
        except anthropic.APITimeoutError as exc:
            raise LLMError(f"timed out after {self._settings.timeout_seconds}s") from exc
        except anthropic.APIStatusError as exc:
            raise LLMError(f"HTTP {exc.status_code} from the model server: {exc.message}") from exc
        except anthropic.APIError as exc:
            raise LLMError(f"model server unreachable: {exc}") from exc
        texts = [b.text for b in reply.content if isinstance(b, TextBlock)]
        if not texts:
            raise LLMError("the model returned no text block")
        return "".join(texts)


def chat_client(settings: LLMSettings) -> ChatClient:
    api_key = os.environ.get(settings.api_key_env)
    if not api_key:
        raise ConfigError(
            f"[llm].api_key_env names {settings.api_key_env}, which is not set -> export it "
            "(any non-empty value for a local server that ignores keys)"
        )
    if settings.provider == "anthropic":
        return AnthropicChat(settings, api_key)
    return OpenAIChat(settings, api_key)
