"""Identities replaced by typed placeholders before anything reaches a model (seed 004).

- A registry name in free text (at least `min_name_length` characters) becomes its entity's
  placeholder, which carries the management system's identifier: `[AZIENDA:12345]`. Whoever
  can read that database knows the entity the moment they read it: this is pseudonymisation,
  a protection from the external recipient, not an anonymisation of the content.
- A checksum-valid codice fiscale, partita IVA, IBAN or e-mail address gets a numbered
  placeholder, `[CF:1]`, `[IBAN:2]`: the same value always the same number, the value kept in
  this object only (it never leaves the process), so `restore` gives back the exact text.
- In rows, the column's kind decides: the reviewed kind (a catalog query's result column, or
  the lineage of a free query's output to its source columns) reconciled with what the name
  proposes (`thoth.privacy.columns.reconcile`: the name never lowers a reviewed kind).
  Identities become placeholders whatever their length, declared free text is protected like
  any text, every column not recognised is masked, and the values that pass are scanned all
  the same, alone and joined with the adjacent cells of their row (a codice fiscale or a name
  split across two cells).

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
from thoth.privacy.columns import PASSING, classify, masking_rule, reconcile
from thoth.privacy.detect import find_codes
from thoth.privacy.registry import APOSTROPHES, Entity, Registry, fold, folded_name

_Span = tuple[int, int, str]
_PUNCTUATED: Final = re.compile(r"[./:\-]")
# Every identifier find_codes knows holds a digit, or is an e-mail address ("@", "(at)").
_MAY_HOLD_CODE: Final = re.compile(r"\d|@|\bat\b", re.IGNORECASE)
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

        self._declared: Mapping[str, ColumnKind] = dict(columns or {})
        self._lock = threading.Lock()
        self._numbered: dict[tuple[str, str], str] = {}  # (kind, value) -> placeholder
        self._counts: dict[str, int] = {}  # kind -> numbered placeholders given
        self._originals: dict[str, str] = {}  # numbered placeholder -> the text it replaced
        self._spellings: dict[str, set[str]] = {}  # entity placeholder -> spellings seen

    # -- the seam ------------------------------------------------------------------------

    def protect(self, text: str) -> str:
        return _replace(text, self._spans(text))

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
        return [self._row(kinds, row) for row in rows]

    def masked_columns(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        reviewed: Mapping[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        given = reviewed or {}
        masked = []
        for i, column in enumerate(columns):
            if self._kind(column, given) != "unknown":
                continue
            values = sum(1 for row in rows if row[i] is not None)
            if values:
                rule = masking_rule(column, self._declared, given.get(column))
                masked.append({"column": column, "values": values, "rule": rule})
        return masked

    # -- steps ---------------------------------------------------------------------------

    def column_kinds(
        self, columns: Sequence[str], reviewed: Mapping[str, str] | None = None
    ) -> dict[str, ColumnKind]:
        """What each column is taken for: for whoever wonders why a value was masked."""
        return {c: self._kind(c, reviewed or {}) for c in columns}

    def _kind(self, column: str, reviewed: Mapping[str, str]) -> ColumnKind:
        """The reviewed kind, never lowered by the name (the name and the settings only
        propose); a reviewed value that is no kind counts as none."""
        declared = reviewed.get(column)
        kind = cast(ColumnKind, declared) if declared in get_args(ColumnKind) else None
        return reconcile(classify(column, self._declared), kind)

    def _row(self, kinds: Sequence[ColumnKind], row: Sequence[Any]) -> list[Any]:
        out = [self._value(kind, value) for kind, value in zip(kinds, row, strict=True)]
        # Whatever the column is called, the values that pass are scanned: each run of
        # adjacent text cells joined by a space, so an identifier or a name split across two
        # cells is found and each part replaced.
        scanned = [
            kind in PASSING and _scannable(value) for kind, value in zip(kinds, row, strict=True)
        ]
        i = 0
        while i < len(out):
            if not scanned[i]:
                i += 1
                continue
            j = i
            while j < len(out) and scanned[j] and (j == i or isinstance(out[j], str)):
                j += 1
            if j == i + 1 or not isinstance(out[i], str):
                j = i + 1  # a number is scanned alone
            self._scan_run(out, i, j)
            i = j
        return out

    def _scan_run(self, out: list[Any], start: int, end: int) -> None:
        cells = [str(v) for v in out[start:end]]
        bounds: list[tuple[int, int]] = []
        at = 0
        for cell in cells:
            bounds.append((at, at + len(cell)))
            at += len(cell) + 1
        joined = " ".join(cells)
        spans = [s for s in self._spans(joined) if _fits(s, bounds, joined)]
        for offset, (low, high) in enumerate(bounds):
            mine = [
                (max(s, low) - low, min(e, high) - low, token)
                for s, e, token in spans
                if s < high and e > low
            ]
            if mine:
                out[start + offset] = _replace(cells[offset], mine)

    def _spans(self, text: str) -> list[_Span]:
        spans: list[_Span] = []
        if _MAY_HOLD_CODE.search(text):
            for found in find_codes(text):
                original = text[found.start : found.end]
                token = self._number(found.kind, found.value, original)
                spans.append((found.start, found.end, token))
        if not len(self.registry):
            return spans
        folded, at = fold(text)
        for found_start, found_end, key in self.registry.find(folded, self.min_name_length):
            start, end = at[found_start], at[found_end - 1] + 1
            if end < len(text) and text[end] in APOSTROPHES:
                end += 1  # "Nicolo'": the accent written as an apostrophe
            spelling = text[start:end]
            entity = self.registry.variants[key]
            if entity is not None:
                token = self._entity(entity, spelling)
            else:  # a surname several people share: no single identifier to give
                token = self._number(UNREGISTERED_IDENTITY, key, spelling)
            spans.append((start, end, token))
        return spans

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
        entity = self.registry.lookup(value)
        if entity is not None:
            return self._entity(entity, value)
        whole = value.strip()
        codes = [f for f in find_codes(whole) if (f.start, f.end) == (0, len(whole))]
        if codes:
            return self._number(codes[0].kind, codes[0].value, value)
        return self._number(UNREGISTERED_IDENTITY, folded_name(value), value)

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


def _fits(span: _Span, bounds: Sequence[tuple[int, int]], joined: str) -> bool:
    """A span inside one cell, or one that fills whole adjacent cells with no dot, dash, slash
    or colon inside: a code or a name split across cells ("RSSMRA85" | "T10A562S", "Mario" |
    "Rossi"), where a number that only ends in the next cell, or "036" | "2010-01-01", is two
    values side by side. Phones and e-mail addresses are taken within one cell only."""
    start, end, token = span
    touched = [(low, high) for low, high in bounds if start < high and end > low]
    if len(touched) <= 1:
        return True
    if token.startswith(("[TEL:", "[EMAIL:")):
        return False
    whole = start == touched[0][0] and end == touched[-1][1]
    return whole and not _PUNCTUATED.search(joined[start:end])


def _scannable(value: Any) -> bool:
    """Text, and whole numbers long enough to be a phone or VAT number (an amount stored
    as a float, a date or a decimal is not an identifier)."""
    if isinstance(value, str):
        return True
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**5


def _replace(text: str, spans: list[_Span]) -> str:
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
