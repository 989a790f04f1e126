"""Seams for what this version does not do yet, so that adding it changes no caller.

- `AnalyticsBranch`: level 3, numbers computed by reviewed catalog queries on the SQL store.
  Not implemented: the service receives None and says numbers are not available.
- `Pseudonymizer`: applied to everything sent to an external model and to its reply. The
  composition root injects `NoPseudonymizer`, an identity, so the hooks hold no `if`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class NumericAnswer:
    """A number computed by a reviewed catalog query (level 3)."""

    text: str
    query_id: str  # the reviewed catalog query that produced it
    data: dict[str, Any] = field(default_factory=dict)


class AnalyticsBranch(Protocol):
    def answer(self, question: str) -> NumericAnswer | None:
        """The computed answer, or None when no reviewed query covers the question."""
        ...


class Pseudonymizer(Protocol):
    def protect(self, text: str) -> str:
        """The text with personal data replaced, before it leaves for an external model."""
        ...

    def restore(self, text: str) -> str:
        """The model's reply with the replacements turned back."""
        ...


class NoPseudonymizer:
    """The identity: this version sends text as it is (no pseudonymisation configured)."""

    def protect(self, text: str) -> str:
        return text

    def restore(self, text: str) -> str:
        return text
