"""Issue 22, point 3: every cell about to reach a model is scanned whatever its column is
called, and the near-miss forms of real data are found. None of the corpus may leak, as free
text or as the cells of a row under harmless-sounding columns."""

from __future__ import annotations

import json

import pytest

from tests.privacy.near_miss import CORPUS, REGISTRY, Case, readable
from thoth.privacy import PlaceholderPseudonymizer

HARMLESS_NAMES = ("importo", "data", "categoria", "codice", "n", "totale")


def test_the_corpus_is_large_enough_and_bilingual() -> None:
    assert len(CORPUS) >= 60
    assert any("english" in c.note or "uk" in c.note or "us " in c.note for c in CORPUS)


@pytest.mark.parametrize("c", CORPUS, ids=[c.note for c in CORPUS])
def test_no_near_miss_form_leaks_from_cells_under_harmless_columns(c: Case) -> None:
    p = PlaceholderPseudonymizer(REGISTRY, min_name_length=4)
    columns = HARMLESS_NAMES[: len(c.cells)]
    [row] = p.protect_rows(columns, [list(c.cells)])
    sent = json.dumps(row, ensure_ascii=False)
    leaked = [s for s in c.secrets if readable(sent, s)]
    assert not leaked, f"{c.note}: {sent}"


@pytest.mark.parametrize("c", CORPUS, ids=[c.note for c in CORPUS])
def test_no_near_miss_form_leaks_from_free_text(c: Case) -> None:
    p = PlaceholderPseudonymizer(REGISTRY, min_name_length=4)
    text = "Dati: " + " | ".join(str(v) for v in c.cells) + " (fine)."
    if len(c.cells) > 1:
        text = "Dati: " + " ".join(str(v) for v in c.cells) + " (fine)."
    sent = p.protect(text)
    leaked = [s for s in c.secrets if readable(sent, s)]
    assert not leaked, f"{c.note}: {sent}"


def test_what_was_replaced_comes_back_on_restore() -> None:
    p = PlaceholderPseudonymizer(REGISTRY, min_name_length=4)
    text = "Rossi Mario (RSS MRA 85T10 A562S), tel. +39 333 123 4567, Nicolo' Bianchi."
    protected = p.protect(text)
    assert "Rossi" not in protected and "333" not in protected
    assert p.restore(protected) == text


@pytest.mark.parametrize(
    "cells",
    [
        ("12.500,00", "2024-03-15", "15/03/2024", "3,5%", "Q3 2023"),
        ("350.000.000", "1.234.567,89", "2023", "Medicina generale", "DRG 127"),
        ("ICD-9 038.9", "codice bianco", "12 pezzi", "CUP J51B21000300006", "V-2024-0012"),
    ],
)
def test_ordinary_cells_pass_as_they_are(cells: tuple[str, ...]) -> None:
    p = PlaceholderPseudonymizer(REGISTRY, min_name_length=4)
    [row] = p.protect_rows(HARMLESS_NAMES[: len(cells)], [list(cells)])
    assert row == list(cells)
