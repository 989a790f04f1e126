"""Issue 46, point 3: a negation — "non", "mai", "nessun"; "not", "never", "neither", "nor" —
before what it denies is a condition on the rows (their complement): "quanti accessi non hanno
avuto un codice rosso" was computed with triage = rosso, the opposite figure. It refuses unless
the query's own texts state the same negation before the same word, as for the relations
("senza", "without").

The wordings are generated from templates and word lists written for these tests (not the
held-out sets' sentences), on the docs-only catalog with fixed similarities."""

from __future__ import annotations

import pytest

from tests.analytics.test_ordinary_words import computed, decided


@pytest.mark.parametrize("colour", ["rosso", "bianco", "verde"])
@pytest.mark.parametrize(
    "template",
    [
        "Quanti accessi al pronto soccorso non hanno avuto un codice {c} nel 2024?",
        "Quanti accessi al pronto soccorso non erano in codice {c} nel 2024?",
        "Quanti accessi al pronto soccorso nel 2023 che non sono in codice {c}?",
    ],
)
def test_an_italian_negation_is_a_condition(template: str, colour: str) -> None:
    question = template.format(c=colour)
    assert computed(decided(question, "accessi-pronto-soccorso")) is None, question


@pytest.mark.parametrize(
    ("question", "target"),
    [
        (
            "How many emergency department visits were not red codes in 2024?",
            "accessi-pronto-soccorso",
        ),
        (
            "How many emergency department visits never got a triage code in 2024?",
            "accessi-pronto-soccorso",
        ),
        ("How many inpatient admissions were not day hospital in 2023?", "ricoveri-anno"),
        ("Quanto si è speso nel 2024 in farmaci non somministrati?", "spesa-farmaci"),
        (
            "Degenza media per reparto nel 2023 dei ricoveri mai riaperti",
            "degenza-media-per-reparto",
        ),
    ],
)
def test_other_negations_are_conditions(question: str, target: str) -> None:
    assert computed(decided(question, target)) is None, question
