"""Issue 46, point 3: a word after a form of to be that is no participle is a predicate — what
the rows are ("quanti accessi erano urgenti", "sono stati gravi", "visits were inappropriate",
"farmaci che erano generici") — a condition on the rows, whatever events they record. Computed
with the query counting every row it is a wrong number. A participle there is the verb of a
compound tense or a passive ("sono giunti", "sono entrati", "è ammontata") and an adverb
("è stata complessivamente") says how, not which rows: both stay ordinary.

The wordings are generated from templates and word lists written for these tests (not the
held-out sets' sentences), on the docs-only catalog with fixed similarities."""

from __future__ import annotations

import pytest

from tests.analytics.test_ordinary_words import computed, decided

ITALIAN = ["urgenti", "gravi", "critici", "impropri"]
ENGLISH = ["urgent", "serious", "critical", "improper"]


@pytest.mark.parametrize("word", ITALIAN)
@pytest.mark.parametrize("be", ["erano", "sono stati", "sono"])
def test_an_italian_predicate_is_a_condition(be: str, word: str) -> None:
    question = f"Quanti accessi al pronto soccorso {be} {word} nel 2024?"
    decision = decided(question, "accessi-pronto-soccorso")
    assert computed(decision) is None, question
    assert decision.reason is not None and word in decision.reason


@pytest.mark.parametrize("word", ENGLISH)
@pytest.mark.parametrize("be", ["were", "have been"])
def test_an_english_predicate_is_a_condition(be: str, word: str) -> None:
    question = f"How many emergency department visits {be} {word} in 2024?"
    decision = decided(question, "accessi-pronto-soccorso")
    assert computed(decision) is None, question
    assert decision.reason is not None and word in decision.reason


@pytest.mark.parametrize("word", ["generici", "costosi"])
def test_a_predicate_in_a_relative_clause_is_a_condition(word: str) -> None:
    question = f"Quanto si è speso in farmaci che erano {word} nel 2024?"
    assert computed(decided(question, "spesa-farmaci")) is None, question


@pytest.mark.parametrize("verb", ["giunti", "entrati", "venuti", "rimasti", "arrivati"])
def test_a_participle_after_to_be_stays_ordinary(verb: str) -> None:
    question = f"Quanti pazienti sono {verb} al pronto soccorso nel 2024?"
    assert computed(decided(question, "accessi-pronto-soccorso")) is not None, question
