"""Evidence IDs: `evidence:<slug>`, assigned once by code, never recomputed afterwards."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Set

PREFIX = "evidence:"
ID_PATTERN = r"^evidence:[a-z0-9]+(?:-[a-z0-9]+)*$"
_MAX_SLUG = 60


def slugify(title: str) -> str:
    ascii_text = (
        unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii").lower()
    )
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text).strip("-")
    slug = slug[:_MAX_SLUG].rstrip("-")
    return slug or "unit"


def allocate_id(title: str, taken: Set[str]) -> str:
    """A new ID from the title; a collision gets the first free suffix -2, -3, ..."""
    base = PREFIX + slugify(title)
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


def slug_of(unit_id: str) -> str:
    return unit_id.removeprefix(PREFIX)
