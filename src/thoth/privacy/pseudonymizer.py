"""Identities replaced by typed placeholders before anything reaches a model (seed 004).

- A registry name in free text (at least `min_name_length` characters) becomes its entity's
  placeholder, which carries the management system's identifier: `[AZIENDA:12345]`. Whoever
  can read that database knows the entity the moment they read it: this is pseudonymisation,
  a protection from the external recipient, not an anonymisation of the content.
- A checksum-valid codice fiscale, partita IVA, IBAN or e-mail address gets a numbered
  placeholder, `[CF:1]`, `[IBAN:2]`: the same value always the same number, the value kept in
  this object only (it never leaves the process), so `restore` gives back the exact text.
- In rows, the column's name decides (`thoth.privacy.columns`): harmless kinds pass, identities
  become placeholders whatever their length (the column says the value is an entity), declared
  free text is protected like any text, and every column not recognised is masked.

`restore` turns a placeholder back into the text it replaced: the one spelling this object
saw for it ("ROSSI COSTRUZIONI SRL" stays upper case, so a verbatim excerpt stays verbatim),
or the registry's name when it saw several.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast, get_args

from thoth.config import ColumnKind
from thoth.privacy.base import MASKED
from thoth.privacy.columns import PASSING, classify
from thoth.privacy.detect import find_codes
from thoth.privacy.registry import Entity, Registry, normalise_name

UNREGISTERED_IDENTITY: Final = "IDENTITA"  # an identity column's value the registry lacks
_PLACEHOLDER: Final = re.compile(r"\[([A-Z][A-Z0-9_]*):([^\[\]:\s]+)\]")


class PlaceholderPseudonymizer:
    def __init__(
        self,
        registry: Registry,
        *,
        min_name_length: int,
        columns: Mapping[str, ColumnKind] | None = None,
    ) -> None:
        self.registry = registry
        self.min_name_length = min_name_length
        self._names = registry.name_pattern(min_name_length)
        self._declared: Mapping[str, ColumnKind] = dict(columns or {})
        self._lock = threading.Lock()
        self._numbered: dict[tuple[str, str], str] = {}  # (kind, value) -> placeholder
        self._counts: dict[str, int] = {}  # kind -> numbered placeholders given
        self._originals: dict[str, str] = {}  # numbered placeholder -> the text it replaced
        self._spellings: dict[str, set[str]] = {}  # entity placeholder -> spellings seen

    # -- the seam ------------------------------------------------------------------------

    def protect(self, text: str) -> str:
        spans: list[tuple[int, int, str]] = []
        for found in find_codes(text):
            original = text[found.start : found.end]
            spans.append((found.start, found.end, self._number(found.kind, found.value, original)))
        if self._names is not None:
            for m in self._names.finditer(text):
                entity = self.registry.by_name[normalise_name(m.group())]
                spans.append((m.start(), m.end(), self._entity(entity, m.group())))
        return _replace(text, spans)

    def restore(self, text: str) -> str:
        def back(m: re.Match[str]) -> str:
            token = m.group()
            with self._lock:
                original = self._originals.get(token)
                spellings = self._spellings.get(token, set())
            if original is not None:
                return original
            if len(spellings) == 1:
                return next(iter(spellings))
            entity = self.registry.by_placeholder.get(token)
            return entity.name if entity is not None else token

        return _PLACEHOLDER.sub(back, text)

    def protect_rows(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        reviewed: Mapping[str, str] | None = None,
    ) -> list[list[Any]]:
        kinds = [self._kind(c, reviewed or {}) for c in columns]
        return [
            [self._value(kind, value) for kind, value in zip(kinds, row, strict=True)]
            for row in rows
        ]

    # -- steps ---------------------------------------------------------------------------

    def column_kinds(self, columns: Sequence[str]) -> dict[str, ColumnKind]:
        """What each column is taken for: for whoever wonders why a value was masked."""
        return {c: classify(c, self._declared) for c in columns}

    def _kind(self, column: str, reviewed: Mapping[str, str]) -> ColumnKind:
        """The name and the settings first: a reviewed kind only classifies what they leave
        unknown, so a catalog entry can unmask a count, never a column named as an identity."""
        kind = classify(column, self._declared)
        declared = reviewed.get(column)
        if kind == "unknown" and declared in get_args(ColumnKind):
            return cast(ColumnKind, declared)
        return kind

    def _value(self, kind: ColumnKind, value: Any) -> Any:
        if value is None or kind in PASSING:
            return value
        if kind == "identity":
            return self._identity(str(value))
        if kind == "free_text":
            return self.protect(str(value))
        return MASKED  # "unknown": nobody said it is harmless

    def _identity(self, value: str) -> str:
        """An identity column's value: its entity's placeholder whatever the name's length,
        a code's numbered placeholder, or a numbered IDENTITA; never the value."""
        entity = self.registry.by_name.get(normalise_name(value))
        if entity is not None:
            return self._entity(entity, value)
        whole = value.strip()
        codes = [f for f in find_codes(whole) if (f.start, f.end) == (0, len(whole))]
        if codes:
            return self._number(codes[0].kind, codes[0].value, value)
        return self._number(UNREGISTERED_IDENTITY, normalise_name(value), value)

    def _entity(self, entity: Entity, spelling: str) -> str:
        with self._lock:
            self._spellings.setdefault(entity.placeholder, set()).add(spelling)
        return entity.placeholder

    def _number(self, kind: str, key: str, original: str) -> str:
        with self._lock:
            token = self._numbered.get((kind, key))
            if token is None:
                self._counts[kind] = self._counts.get(kind, 0) + 1
                token = f"[{kind}:{self._counts[kind]}]"
                self._numbered[(kind, key)] = token
                self._originals[token] = original
            return token


def _replace(text: str, spans: list[tuple[int, int, str]]) -> str:
    """The text with non-overlapping spans replaced: the earliest wins, then the longest (a
    registry name holding a VAT number is replaced once, as the name)."""
    out: list[str] = []
    at = 0
    for start, end, token in sorted(spans, key=lambda s: (s[0], -(s[1] - s[0]))):
        if start < at:
            continue
        out += [text[at:start], token]
        at = end
    out.append(text[at:])
    return "".join(out)
