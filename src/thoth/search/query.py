"""The deterministic query text of seed §9.6: the same text goes to dense and to BM25."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from thoth.errors import RequestError

LABELS = ("Domanda", "Concetti", "Tabelle", "Colonne")


class EmptyQuestion(RequestError, ValueError):
    """An empty question is rejected before any search."""


def _values(values: Iterable[str]) -> list[str]:
    cleaned = {unicodedata.normalize("NFC", v).strip() for v in values}
    # Sorted by code point, no case folding: quoted PostgreSQL identifiers are case-sensitive.
    return sorted(v for v in cleaned if v)


def render_query(
    question: str,
    concepts: Iterable[str] = (),
    tables: Iterable[str] = (),
    columns: Iterable[str] = (),
) -> str:
    """Question kept as written (only NFC, line ends, outer spaces); context values NFC,
    stripped, deduplicated exactly and sorted; empty lines omitted."""
    text = unicodedata.normalize("NFC", question).replace("\r\n", "\n").replace("\r", "\n")
    text = text.strip()
    if not text:
        raise EmptyQuestion("the question is empty")
    lines = [f"Domanda: {text}"]
    for label, values in (("Concetti", concepts), ("Tabelle", tables), ("Colonne", columns)):
        vals = _values(values)
        if vals:
            lines.append(f"{label}: {', '.join(vals)}")
    return "\n".join(lines)
