"""How to choose `min_name_length` from the data: how often the registry's names, length by
length, turn up in a sample of text.

Give it text that should mention few or none of the registry's entities (the regulations, the
manuals: what the answers are made of). A one-letter supplier matches every list marker, a
three-letter acronym every word it spells: short names match a lot and the matches are not
mentions. The threshold goes where the matches stop being noise (seed 004: "where the border
between acronyms and real companies runs").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from thoth.privacy.registry import Registry, normalise_name


@dataclass(frozen=True)
class LengthRow:
    length: int  # characters of the name
    names: int  # registry names this long
    matched: int  # of them, names found in the sample
    matches: int  # their occurrences in the sample
    examples: tuple[tuple[str, int], ...]  # the most matched names, with their counts

    def as_dict(self) -> dict[str, object]:
        return {
            "length": self.length,
            "names": self.names,
            "matched": self.matched,
            "matches": self.matches,
            "examples": [{"name": n, "matches": c} for n, c in self.examples],
        }


def length_profile(registry: Registry, texts: Iterable[str], examples: int = 3) -> list[LengthRow]:
    """One row per name length present in the registry, shortest first."""
    pattern = registry.name_pattern(1)
    counts: Counter[str] = Counter()
    if pattern is not None:
        for text in texts:
            counts.update(normalise_name(m.group()) for m in pattern.finditer(text))
    by_length: dict[int, list[str]] = {}
    for name in {normalise_name(e.name) for e in registry.entities}:
        by_length.setdefault(len(name), []).append(name)
    rows = []
    for length in sorted(by_length):
        names = by_length[length]
        found = sorted(((n, counts[n]) for n in names if counts[n]), key=lambda x: (-x[1], x[0]))
        rows.append(
            LengthRow(
                length,
                len(names),
                len(found),
                sum(c for _, c in found),
                tuple(found[:examples]),
            )
        )
    return rows
