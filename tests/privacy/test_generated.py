"""Issue 46, point 2: identities found by normalisation. The corpus is generated from the rules
(tests/privacy/generated.py): no generated form may leave anything of itself readable, as text,
as a Markdown table row, as a tab-separated line or as the cells of a row under harmless column
names; each placeholder gives back the exact text it replaced; and no generated ordinary value
(amounts, dates, years, references, rows of figures) may change."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.privacy.generated import (
    COLUMNS,
    changes,
    leaks,
    negatives,
    plain,
    positives,
    pseudonymizer,
    residue,
)

POSITIVES = positives()
NEGATIVES = negatives()


def test_the_generated_corpus_covers_every_kind_and_rule() -> None:
    kinds = Counter(f.kind for f in POSITIVES)
    assert set(kinds) == {"CF", "PIVA", "IBAN", "EMAIL", "TEL", "NAME"}
    assert min(kinds.values()) >= 100, kinds
    assert any(len(f.cells) == 3 for f in POSITIVES if f.kind == "EMAIL")
    assert len(NEGATIVES) >= 500


@pytest.mark.parametrize("kind", ["CF", "PIVA", "IBAN", "EMAIL", "TEL", "NAME"])
def test_no_generated_form_leaks(kind: str) -> None:
    forms = [f for f in POSITIVES if f.kind == kind]
    leaked = [(f.rule, f.cells, how) for f in forms for how in leaks(f)]
    assert not leaked, f"{len(leaked)} leaks of {len(forms)} {kind} forms, e.g. {leaked[:8]}"


def test_no_generated_ordinary_value_changes() -> None:
    changed = [c for form in NEGATIVES for c in changes(form)]
    assert not changed, f"{len(changed)} ordinary values changed, e.g. {changed[:8]}"


@pytest.mark.parametrize(
    "cells",
    [
        ("RSSMRA", "85T10", "A562S"),
        ("mario", "@", "example.it"),
        ("mario.rossi", "@example", ".it"),
        ("IT60 X054", "2811 1010", "0000 0123 456"),
        ("Giulia", "D'Amico", "(referente)"),
    ],
)
def test_an_identity_over_three_cells_is_found_whole(cells: tuple[str, ...]) -> None:
    """Bad input: a value split over three cells, as a row and as a Markdown row, leaves
    nothing of itself in clear (the third name cell is no part of the name and stays)."""
    p = pseudonymizer()
    [row] = p.protect_rows(COLUMNS[:3], [list(cells)])
    table = p.protect("| " + " | ".join(cells) + " |")
    for sent in (" ".join(row), table):
        assert residue(sent) in ("", "referente"), sent


def test_a_name_running_into_an_e_mail_address_is_not_half_replaced() -> None:
    """Two findings that overlap become one placeholder over both: the name "Mario Rossi"
    ends inside the address "rossi.mario@example.it"; nothing of either is left, and the
    placeholder gives the exact text back."""
    p = pseudonymizer()
    text = "Contatto: Mario rossi.mario@example.it, sede di Roma."
    sent = p.protect(text)
    assert residue(sent) == plain("Contatto: , sede di Roma."), sent
    assert p.restore(sent) == text
