"""Issue 46, point 3: words that only say "broken down by" — a participle of dividing or
grouping before per/by ("divisi per", "suddivisi per", "ripartiti per", "raggruppati per",
"disaggregati per", "separati per"; "divided by", "broken down by", "split by", "grouped by",
"separated by", "disaggregated by") — ask the grouping that per/by asks, and no condition on the
rows: they are not a complement or a modifier a catalog must explain. The grouping itself is
still read and must be a column of the query's result.

The wordings are generated from templates and word lists written for these tests (not the
held-out sets' sentences), on the docs-only catalog with fixed similarities."""

from __future__ import annotations

import pytest

from tests.analytics.test_ordinary_words import computed, decided

ITALIAN = ["divisi", "suddivisi", "ripartiti", "raggruppati", "disaggregati", "separati"]
ENGLISH = ["divided", "broken down", "split", "grouped", "separated", "disaggregated"]


@pytest.mark.parametrize("word", ITALIAN)
def test_an_italian_participle_of_grouping_is_a_grouping_word(word: str) -> None:
    # after a content word, where a modifier would stand ("visita divisi")
    question = f"Minuti medi di attesa prima della visita {word} per codice di triage, 2024"
    decision = decided(question, "attesa-media-per-triage")
    assert computed(decision) == {"query": "attesa-media-per-triage", "anno": 2024}, decision.reason
    plural = f"Degenza media dei ricoveri ordinari {word} per reparto nel 2023"
    decision = decided(plural, "degenza-media-per-reparto")
    assert computed(decision) == {"query": "degenza-media-per-reparto", "anno": 2023}, (
        decision.reason
    )


@pytest.mark.parametrize("word", ENGLISH)
def test_an_english_participle_of_grouping_is_a_grouping_word(word: str) -> None:
    question = f"Average length of stay {word} by ward in 2023"
    decision = decided(question, "degenza-media-per-reparto")
    assert computed(decision) == {"query": "degenza-media-per-reparto", "anno": 2023}, (
        decision.reason
    )


@pytest.mark.parametrize("word", ["divisi", "split"])
def test_the_grouping_they_introduce_is_still_read(word: str) -> None:
    """ "Divisi per reparto" asks a breakdown by ward: a query whose result has no ward is
    refused, as for "per reparto"."""
    link = "per" if word == "divisi" else "by"
    question = f"Quanti ricoveri ordinari {word} {link} reparto nel 2024?"
    decision = decided(question, "ricoveri-anno")
    assert computed(decision) is None
    fit = next(f for f in decision.fits if f.query_id == "ricoveri-anno")
    assert fit.refused is not None and fit.refused.startswith("grouping mismatch"), fit.refused
