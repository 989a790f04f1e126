"""What a result column holds, from its name alone: the harmless is declared, the rest masked.

Seed 004: listing the sensitive columns would let a new query, written without a thought,
leave in clear with nothing protesting. So the harmless kinds (amount, quantity, date, code,
category) are recognised by name, identities too (they become placeholders), and every other
column is "unknown": masked. The error this allows is masking too much, which a reader sees
and reports the same hour; a silent leak nobody ever reports.

The vocabulary is `thoth.config.ColumnKind`. `[privacy] columns` (glob -> kind, first match
wins) is read before the built-in names, so a user can pass a column or mask one.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from typing import Final

from thoth.config import ColumnKind


def _vocabulary(words: str) -> frozenset[str]:
    return frozenset(words.split())


PASSING: Final[frozenset[str]] = frozenset({"amount", "quantity", "date", "code", "category"})
# How much protection a kind gets: a value passes (scanned), free text is protected, an
# identity becomes a placeholder, the unknown is masked. The strictest of several wins.
_RANK: Final[dict[str, int]] = {
    **dict.fromkeys(PASSING, 0), "free_text": 1, "identity": 2, "unknown": 3,
}  # fmt: skip


def strictest(kinds: Iterable[ColumnKind]) -> ColumnKind:
    """The kind that protects most among `kinds` ("unknown" for none: nothing known)."""
    return max(kinds, key=lambda k: _RANK.get(k, 3), default="unknown")


def reconcile(by_name: ColumnKind, reviewed: ColumnKind | None) -> ColumnKind:
    """A column's kind from its name and its reviewed kind: the name only proposes, so it
    never lowers a reviewed kind ("codice_paziente" reviewed as an identity is not a code);
    a name that says more (an identity word) still raises it; an unknown name adds
    nothing to a reviewed kind."""
    if reviewed is None:
        return by_name
    if by_name == "unknown":
        return reviewed
    return strictest((by_name, reviewed))


# Words of a column name, by kind. Identity is looked at first: "numero_telefono" holds
# "numero" but is a phone number, "importo_cliente" holds "importo" but names a customer
# (masking too much is the safe direction).
_IDENTITY: Final = _vocabulary(
    """nome cognome nominativo ragione sociale denominazione intestatario titolare cliente
    fornitore beneficiario dipendente persona utente referente contatto cf fiscale piva
    partita vat iban email mail pec telefono tel cellulare phone mobile indirizzo address via
    name
    surname firstname lastname customer supplier vendor employee person user contact owner
    holder taxcode ssn"""
)
_KIND_WORDS: Final[tuple[tuple[ColumnKind, frozenset[str]], ...]] = (
    (
        "date",
        _vocabulary(
            """data date dt giorno mese anno year month day periodo period trimestre quarter
            semestre settimana week timestamp ts scadenza"""
        ),
    ),
    (
        "amount",
        _vocabulary(
            """importo importi ammontare totale prezzo costo costi spesa spese speso budget
            valore saldo fatturato ricavo ricavi incasso incassi stanziamento stanziato
            impegnato impegni pagato residuo euro eur amount price cost total value balance
            revenue spend spent paid"""
        ),
    ),
    (
        "quantity",
        _vocabulary(
            """quantita qta qty numero num n count conteggio pezzi ore hours percentuale perc
            pct media avg somma sum min max"""
        ),
    ),
    ("code", _vocabulary("id codice cod code sigla sku cup cig")),
    (
        "category",
        _vocabulary(
            """stato status tipo tipologia type categoria category canale channel settore
            sector mercato market regione region provincia paese country valuta
            currency"""
        ),
    ),
)
_SPLIT: Final = re.compile(r"[^0-9a-z]+")
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Za-z])(?=[0-9])")


def words(column: str) -> list[str]:
    """ "dataFattura", "DATA_FATTURA", "data fattura" -> ["data", "fattura"]; accents folded
    so "quantità" is "quantita"."""
    plain = _CAMEL.sub("_", column).lower()
    plain = plain.translate(str.maketrans("àáèéìíòóùú", "aaeeiioouu"))
    return [w for w in _SPLIT.split(plain) if w]


def classify(column: str, declared: Mapping[str, ColumnKind]) -> ColumnKind:
    """The column's kind: a declared glob first (case-insensitive, in order), then the words
    of its name, else "unknown"."""
    for pattern, kind in declared.items():
        if fnmatch.fnmatchcase(column.lower(), pattern.lower()):
            return kind
    found = words(column)
    if any(w in _IDENTITY for w in found):
        return "identity"
    for kind, vocabulary in _KIND_WORDS:
        if any(w in vocabulary for w in found):
            return kind
    return "unknown"


def masking_rule(column: str, declared: Mapping[str, ColumnKind], reviewed: str | None) -> str:
    """Why `column` is masked (its kind is "unknown"), in the words a reviewer acts on: the
    `[privacy] columns` glob that says so, or that nothing declared it harmless."""
    for pattern, kind in declared.items():
        if fnmatch.fnmatchcase(column.lower(), pattern.lower()):
            return f"[privacy] columns: {pattern!r} = {kind!r}"
    said = f"reviewed kind {reviewed!r}" if reviewed else "no reviewed kind"
    return (
        f"no word of the name marks a harmless kind and {said}: nothing declared it harmless "
        f"-> declare it in [privacy] columns or as the result column's kind in the catalog"
    )
