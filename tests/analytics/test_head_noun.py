"""Issue 46, point 3: in "il record di attesa", "il primato della degenza", "the record of
emergency department visits" the word before di/of is what is asked — the head of the noun
phrase — and the query's own word after it only its complement. A head no query explains is a
figure the catalog does not compute (the record is a maximum, a spread is no average): computed
as the query's figure it would be a wrong number. Generic measure nouns ("tempo", "durata",
"importo", "length", "amount") keep their reading: the figure is their complement.

The wordings are generated from templates and word lists written for these tests (not the
held-out sets' sentences), on the docs-only catalog with fixed similarities."""

from __future__ import annotations

import pytest

from tests.analytics.test_ordinary_words import computed, decided

HEADS = ["record", "scarto", "massimale"]


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize(
    ("template", "target"),
    [
        ("Qual è il {h} di attesa in pronto soccorso nel 2024?", "attesa-media-per-triage"),
        ("Qual è stato il {h} di accessi al pronto soccorso nel 2024?", "accessi-pronto-soccorso"),
        ("Qual è il {h} della degenza per reparto nel 2023?", "degenza-media-per-reparto"),
        ("What was the {h} of emergency department visits in 2024?", "accessi-pronto-soccorso"),
    ],
)
def test_an_unknown_head_of_the_query_s_words_refuses(
    template: str, target: str, head: str
) -> None:
    question = template.format(h=head)
    decision = decided(question, target)
    assert computed(decision) is None, question
    assert decision.reason is not None and head in decision.reason


@pytest.mark.parametrize(
    ("question", "target"),
    [
        (
            "Qual è stato il tempo medio di attesa per codice di triage nel 2024?",
            "attesa-media-per-triage",
        ),
        ("Qual è la durata media della degenza per reparto nel 2023?", "degenza-media-per-reparto"),
        ("Qual è stato l'importo della spesa per farmaci nel 2022?", "spesa-farmaci"),
    ],
)
def test_a_generic_measure_noun_keeps_its_reading(question: str, target: str) -> None:
    decision = decided(question, target)
    assert computed(decision) is not None and decision.query_id == target, decision.reason


@pytest.mark.parametrize("whole", ["l'insieme", "il complesso", "la totalità"])
def test_a_noun_of_the_whole_applies_no_function(whole: str) -> None:
    """ "L'insieme dei farmaci", "the whole of": the rows themselves, no function on them."""
    decision = decided(f"Quanto è costato {whole} dei farmaci nel 2024?", "spesa-farmaci")
    assert computed(decision) == {"query": "spesa-farmaci", "anno": 2024, "reparto": None}, (
        decision.reason
    )
