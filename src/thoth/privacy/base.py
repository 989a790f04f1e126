"""The seam: three methods every path to an external model calls, and the object that does
nothing.

The composition root (`thoth.runtime.open_pseudonymizer`) is the one place that reads the
switch `[privacy] pseudonymise`: on, it injects a `PlaceholderPseudonymizer`; off, the
`NoPseudonymizer`. The hooks call the three methods unconditionally and hold no `if` on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

MASKED = "[MASKED]"  # a row value nobody declared harmless: gone, not restorable


class Pseudonymizer(Protocol):
    def protect(self, text: str) -> str:
        """The text with identities replaced by placeholders, before it leaves for a model."""
        ...

    def restore(self, text: str) -> str:
        """The model's reply with this pseudonymizer's placeholders turned back."""
        ...

    def protect_rows(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        reviewed: Mapping[str, str] | None = None,
    ) -> list[list[Any]]:
        """Result rows as they may leave: harmless columns as they are, identities as
        placeholders, every column not recognised masked. `reviewed`: kinds a reviewer
        declared per column (a catalog query's result columns); they only classify a column
        its name and the [privacy] settings leave unknown, never override them."""
        ...

    def masked_columns(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        reviewed: Mapping[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        """The columns `protect_rows` masks in these rows: {column, values (how many were
        masked), rule (why)}; what a reader's over_masked report names."""
        ...


class NoPseudonymizer:
    """The identity: text and rows leave as they are (`[privacy] pseudonymise = false`)."""

    def protect(self, text: str) -> str:
        return text

    def restore(self, text: str) -> str:
        return text

    def protect_rows(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        reviewed: Mapping[str, str] | None = None,
    ) -> list[list[Any]]:
        return [list(row) for row in rows]

    def masked_columns(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        reviewed: Mapping[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        return []


def protect_tree(pseudonymizer: Pseudonymizer, value: Any) -> Any:
    """Every string of a JSON-like value protected, keys included: a payload is protected
    before it is serialised, so a name is found whatever JSON would escape in it."""
    return _walk(pseudonymizer.protect, value)


def restore_tree(pseudonymizer: Pseudonymizer, value: Any) -> Any:
    """Every string of a JSON-like value (a model's tool-call arguments) restored."""
    return _walk(pseudonymizer.restore, value)


def _walk(apply: Callable[[str], str], value: Any) -> Any:
    if isinstance(value, str):
        return apply(value)
    if isinstance(value, dict):
        return {_walk(apply, k): _walk(apply, v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(apply, v) for v in value]
    return value
