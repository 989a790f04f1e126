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
  the same, alone and joined with the adjacent cells of their row (a codice fiscale, an
  e-mail address or a name split across two or more cells).
- Findings that overlap become one placeholder over both: nothing is left half-replaced.

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
from thoth.privacy.detect import CELL_DELIMITERS, fills_cells, find_codes
from thoth.privacy.registry import APOSTROPHES, Entity, Registry, fold, folded_name

_Span = tuple[int, int, str]
# A candidate before it is given a placeholder: (start, end, kind, key, entity or None).
_Candidate = tuple[int, int, str, str, Entity | None]
# Every identifier find_codes knows holds a digit, or is an e-mail address ("@", "(at)",
# "chiocciola").
_MAY_HOLD_CODE: Final = re.compile(r"\d|@|\b(?:at|chiocciola)\b", re.IGNORECASE)
_BLOCK: Final = {ord(c): "\0" for c in CELL_DELIMITERS}  # cells apart, lengths kept
_CELL_JOIN: Final = " | "  # how a row's adjacent cells are scanned: as a Markdown row
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
        # adjacent text cells joined as a Markdown row, so an identifier, an e-mail address or
        # a name split across two or more cells is found and each part replaced.
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
            at += len(cell) + len(_CELL_JOIN)
        joined = _CELL_JOIN.join(cells)
        spans = self._spans(joined, figures_across_cells=True)
        for offset, (low, high) in enumerate(bounds):
            mine = [
                (max(s, low) - low, min(e, high) - low, token)
                for s, e, token in spans
                if s < high and e > low
            ]
            if mine:
                out[start + offset] = _replace(cells[offset], mine)

    def _spans(self, text: str, *, figures_across_cells: bool = False) -> list[_Span]:
        """The placeholders for `text`: codes and registry names found, overlaps resolved
        (`_resolve`), each span given its token."""
        candidates: list[_Candidate] = []
        if _MAY_HOLD_CODE.search(text):
            for found in find_codes(text, figures_across_cells=figures_across_cells):
                candidates.append((found.start, found.end, found.kind, found.value, None))
        if len(self.registry):
            candidates += self._names(text)
        spans: list[_Span] = []
        for start, end, kind, key, entity, merged in _resolve(candidates):
            original = text[start:end]
            if entity is not None and not merged:
                spans.append((start, end, self._entity(entity, original)))
            else:
                spans.append((start, end, self._number(kind, key, original)))
        return spans

    def _names(self, text: str) -> list[_Candidate]:
        """Registry names in `text`: within each cell, and over adjacent cells when they fill
        them ("Mario" | "Rossi")."""
        folded, at = fold(text)
        blocked = folded.translate(_BLOCK)
        found = self._names_in(text, blocked, at)
        if blocked != folded:
            found += [
                c
                for c in self._names_in(text, folded, at)
                if any(d in text[c[0] : c[1]] for d in CELL_DELIMITERS)
                and fills_cells(text, c[0], c[1])
            ]
        return found

    def _names_in(self, text: str, folded: str, at: list[int]) -> list[_Candidate]:
        found: list[_Candidate] = []
        for found_start, found_end, key in self.registry.find(folded, self.min_name_length):
            start, end = at[found_start], at[found_end - 1] + 1
            if end < len(text) and text[end] in APOSTROPHES:
                end += 1  # "Nicolo'": the accent written as an apostrophe
            # None: a surname several people share, no single identifier to give
            found.append((start, end, UNREGISTERED_IDENTITY, key, self.registry.variants[key]))
        return found

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


def _scannable(value: Any) -> bool:
    """Text, and whole numbers long enough to be a phone or VAT number (an amount stored
    as a float, a date or a decimal is not an identifier)."""
    if isinstance(value, str):
        return True
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**5


def _resolve(candidates: list[_Candidate]) -> list[tuple[int, int, str, str, Entity | None, bool]]:
    """Non-overlapping spans: a candidate inside another is the other's (a registry name
    holding a VAT number is replaced once, as the name); two that overlap without one holding
    the other become one span over both, so nothing of either is left in clear (a name that
    runs into an e-mail address: "Mario rossi.mario@x.it"). The flag says a span was merged:
    it gets a numbered placeholder of its first candidate's kind."""
    out: list[tuple[int, int, str, str, Entity | None, bool]] = []
    for start, end, kind, key, entity in sorted(candidates, key=lambda c: (c[0], -(c[1] - c[0]))):
        if out and start < out[-1][1]:
            last = out[-1]
            if end > last[1]:
                merged_key = f"{last[3]}+{key}"
                out[-1] = (last[0], end, last[2], merged_key, None, True)
            continue
        out.append((start, end, kind, key, entity, False))
    return out


def _replace(text: str, spans: list[_Span]) -> str:
    """The text with non-overlapping spans replaced (`_resolve` made them so)."""
    out: list[str] = []
    at = 0
    for start, end, token in sorted(spans, key=lambda s: (s[0], -(s[1] - s[0]))):
        if start < at:
            continue
        out += [text[at:start], token]
        at = end
    out.append(text[at:])
    return "".join(out)
