"""Case and accent folding, the one definition every matcher uses."""

from __future__ import annotations

import unicodedata


def fold(text: str) -> str:
    """Lower-case, accents stripped: "Città" and "citta" are the same word (for keywords, for
    the extractive answerer's matching, for glossary terms)."""
    if text.isascii():  # nothing to strip: the second stage folds every candidate per question
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))
