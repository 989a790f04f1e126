"""Restructurers: `make_restructurer(settings)` chooses one from the workspace config."""

from __future__ import annotations

from thoth.config import Settings
from thoth.evidence.restructure.base import (
    Draft,
    RestructureError,
    Restructurer,
    Restructuring,
    ReviewNote,
)
from thoth.evidence.restructure.rules import RuleBasedRestructurer
from thoth.privacy import Pseudonymizer

__all__ = [
    "Draft",
    "RestructureError",
    "Restructurer",
    "Restructuring",
    "ReviewNote",
    "RuleBasedRestructurer",
    "make_restructurer",
]


def make_restructurer(settings: Settings, pseudonymizer: Pseudonymizer) -> Restructurer:
    """`pseudonymizer`: what the composition root (`thoth.runtime.open_pseudonymizer`) chose
    for `[privacy]`; only the model restructurer sends anything out."""
    if settings.evidence.restructurer == "llm":
        from thoth.evidence.restructure.llm import LLMRestructurer
        from thoth.llm import chat_client

        return LLMRestructurer(chat_client(settings.llm), pseudonymizer)
    return RuleBasedRestructurer()
