"""Seams for what this version does not do yet, so that adding it changes no caller.

- `AnalyticsBranch`: level 3, numbers computed by reviewed catalog queries on the SQL store.
  Not implemented: the service receives None and says numbers are not available.
- `Pseudonymizer`: applied to everything sent to an external model and to its reply, and to
  result rows before they reach one. It lives in `thoth.privacy` (the restructurer and the
  session driver use it too) and is re-exported here; the composition root injects the real
  one or `NoPseudonymizer`, an identity, so the hooks hold no `if`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from thoth.privacy import NoPseudonymizer, Pseudonymizer

__all__ = ["AnalyticsBranch", "NoPseudonymizer", "NumericAnswer", "Pseudonymizer"]


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
