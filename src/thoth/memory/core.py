"""Memory policy shared by every boundary: what may become a memory and what text it is.

A memory is reusable domain knowledge: a concept a reviewer clarified. Table and column
choices (`table_promoted`, `table_excluded`, `column_promoted`…) answer one question and stay
in its session; a table may appear inside a memory's explanation, never as the memory. Every
boundary (ledger markers, registry, search, promotion preview, projection) checks against the
one `REUSABLE_TYPES`, so widening it is one deliberate change. It is defined in the session
ledger, which checks that promotion markers refer to such a decision (memory builds on
sessions, never the reverse), and re-exported here, where memory code looks for it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol

from thoth.session.ledger import REUSABLE_TYPES

__all__ = ["REUSABLE_TYPES", "MemoryContent", "content_sha256", "memory_text", "text_of"]


def memory_text(
    *,
    type: str,
    subject: str,
    detail: str,
    rationale: str,
    question_context: str,
    concepts: Sequence[str],
) -> str:
    """The canonical text of a memory: what gets embedded for search, and what
    `content_sha256` hashes. Provenance (session, seq, id, time) is not part of it, so the
    same concept hashes the same wherever it came from."""
    lines = [
        f"type: {type}",
        f"subject: {subject}",
        f"detail: {detail}",
        f"rationale: {rationale}",
        f"question: {question_context}",
    ]
    if concepts:
        lines.append(f"concepts: {'; '.join(concepts)}")
    return "\n".join(lines)


class MemoryContent(Protocol):
    """What a memory's text is made of: a draft and a registry record both have it."""

    @property
    def type(self) -> str: ...
    @property
    def subject(self) -> str: ...
    @property
    def detail(self) -> str: ...
    @property
    def rationale(self) -> str: ...
    @property
    def question_context(self) -> str: ...
    @property
    def concepts(self) -> Sequence[str]: ...


def text_of(memory: MemoryContent) -> str:
    """`memory_text` of a draft or a record."""
    return memory_text(
        type=memory.type,
        subject=memory.subject,
        detail=memory.detail,
        rationale=memory.rationale,
        question_context=memory.question_context,
        concepts=memory.concepts,
    )


def content_sha256(text: str) -> str:
    """Hex SHA-256 of the UTF-8 text: the index re-embeds a memory only when this changes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
