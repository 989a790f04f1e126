"""Memories: concepts a reviewer promoted from a session, kept in a global registry for
future sessions to propose (never to apply on their own)."""

from thoth.memory.core import REUSABLE_TYPES, content_sha256, memory_text
from thoth.memory.registry import (
    MemoryDraft,
    MemoryRecord,
    MemoryRefused,
    Registry,
    RegistryCorrupted,
)

__all__ = [
    "REUSABLE_TYPES",
    "MemoryDraft",
    "MemoryRecord",
    "MemoryRefused",
    "Registry",
    "RegistryCorrupted",
    "content_sha256",
    "memory_text",
]
