"""Issue 46, point 3: a generic quantifier or determiner before its noun — "vari", "varie",
"diversi", "diverse", "singoli", "singole", "rispettivi", "rispettive"; "various", "several",
"different", "individual", "respective" — after a preposition or an article ("nei vari
reparti", "per i singoli reparti", "across the various wards") or opening the question puts no
condition on the rows: it is no complement a catalog must explain. After its noun "diversi"
means distinct ("pazienti diversi"), a figure the catalog does not compute: that place is
read as before.

The wordings are generated from templates and word lists written for these tests (not the
held-out sets' sentences), on the docs-only catalog with fixed similarities."""

from __future__ import annotations

import pytest

from tests.analytics.test_ordinary_words import computed, decided

ITALIAN = ["vari", "diversi", "singoli", "rispettivi"]
ENGLISH = ["various", "several", "different", "individual", "respective"]


@pytest.mark.parametrize("word", ITALIAN)
@pytest.mark.parametrize(
    "template",
    [
        "Degenza media nei {word} reparti nel 2022",
        "Qual è la degenza media per i {word} reparti nel 2024?",
    ],
)
def test_an_italian_quantifier_before_its_noun_is_no_condition(template: str, word: str) -> None:
    question = template.format(word=word)
    decision = decided(question, "degenza-media-per-reparto")
    assert computed(decision) is not None, decision.reason
    assert decision.query_id == "degenza-media-per-reparto"


@pytest.mark.parametrize("word", ENGLISH)
def test_an_english_quantifier_before_its_noun_is_no_condition(word: str) -> None:
    question = (
        f"Average waiting time in the emergency department for the {word} triage codes in 2023"
    )
    decision = decided(question, "attesa-media-per-triage")
    assert computed(decision) == {"query": "attesa-media-per-triage", "anno": 2023}, decision.reason


@pytest.mark.parametrize(
    "question",
    [
        "Quanti pazienti diversi sono stati ricoverati nel 2023?",
        "Quanti ricoveri diversi ha dimesso la Geriatria nel 2023?",
    ],
)
def test_after_its_noun_diversi_is_still_read(question: str) -> None:
    assert computed(decided(question, "ricoveri-anno")) is None
