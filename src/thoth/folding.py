"""Case and accent folding, the one definition every matcher uses."""

from __future__ import annotations

import unicodedata


def fold(text: str) -> str:
    """Lower-case, accents stripped: "Città" and "citta" are the same word (for keywords, for
    the extractive answerer's matching, for glossary terms)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))
