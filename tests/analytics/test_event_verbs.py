"""Issue 46, point 3: a verb that names another event of the counted rows makes the counted
population a subset of them ("quanti pazienti hanno abbandonato il pronto soccorso" counts the
abandonments, not the visits). Computed with the query counting every row, it is a wrong
number — the worst answer — so it refuses.

Two ways the catalog knows such an event, each read for a whole class of words:
- the rows record it in a column the query does not read (the emergency room's `abbandono`,
  `ricoverato` flags; `abbandono_prima_visita`): the verb is that column's word inflected,
  "abbandonato", "abbandonano", "abbandonati", "visitati" of "abbandono", "visita" — the
  stemmer keeps the noun and the participle apart, so the root is read (the noun, but for its
  last letter, begins the verb);
- another query's texts use the verb and this query's do not: the verb after an auxiliary
  ("hanno abbandonato", "sono stati dimessi", "were discharged") or a relative pronoun ("che
  hanno", "who were") names what happened to the rows that query counts.

The wordings are generated from templates and word lists written for these tests (not the
held-out sets' sentences), on the docs-only catalog with fixed similarities."""

from __future__ import annotations

import pytest

from tests.analytics.test_ordinary_words import computed, decided

# Inflections of a column of the emergency room's own rows (`abbandono`, `visita` of
# `abbandono_prima_visita`, `ricoverato`) the count of visits does not read.
COLUMN_VERBS = [
    "hanno abbandonato",
    "abbandonano",
    "abbandonarono",
    "sono stati abbandonati",
    "sono stati visitati",
    "vengono visitati",
    "sono stati ricoverati",
]


@pytest.mark.parametrize("verb", COLUMN_VERBS)
@pytest.mark.parametrize(
    "template",
    [
        "Quanti pazienti {verb} il pronto soccorso nel 2024?",
        "Quanti accessi al pronto soccorso {verb} nel 2023?",
        "Nel 2022 quanti pazienti del pronto soccorso {verb}?",
    ],
)
def test_a_verb_of_a_column_the_count_does_not_read_refuses(template: str, verb: str) -> None:
    question = template.format(verb=verb)
    decision = decided(question, "accessi-pronto-soccorso")
    assert computed(decision) is None, question
    fit = next(f for f in decision.fits if f.query_id == "accessi-pronto-soccorso")
    assert fit.refused is not None, question


@pytest.mark.parametrize("verb", ["giunti", "entrati", "transitati", "arrivati"])
def test_a_verb_of_the_counted_event_itself_stays_ordinary(verb: str) -> None:
    """The rows' own event (the arrival of a visit), said with a verb no query speaks of or
    with the query's own word, is still computed."""
    question = f"Quanti pazienti sono {verb} al pronto soccorso nel 2024?"
    assert computed(decided(question, "accessi-pronto-soccorso")) == {
        "query": "accessi-pronto-soccorso",
        "anno": 2024,
        "triage": None,
    }


@pytest.mark.parametrize(
    ("question", "target"),
    [
        (
            "Quanti pazienti sono stati dimessi dal pronto soccorso nel 2024?",
            "accessi-pronto-soccorso",
        ),
        (
            "Quanti accessi al pronto soccorso sono stati dimessi nel 2023?",
            "accessi-pronto-soccorso",
        ),
        (
            "Nel 2022 quanti pazienti che sono stati dimessi sono passati dal pronto soccorso?",
            "accessi-pronto-soccorso",
        ),
        (
            "How many emergency department patients were discharged in 2024?",
            "accessi-pronto-soccorso",
        ),
        (
            "How many emergency department visits have been discharged in 2023?",
            "accessi-pronto-soccorso",
        ),
        ("Quanti ricoveri ordinari hanno abbandonato la Geriatria nel 2024?", "ricoveri-anno"),
        ("How many inpatient admissions were triaged in 2024?", "ricoveri-anno"),
    ],
)
def test_a_verb_only_another_query_uses_after_an_auxiliary_refuses(
    question: str, target: str
) -> None:
    """The verb of a compound tense or a passive says what happened to the rows; one only
    another query's texts use ("dimessi" of the admissions, beside the emergency room's visits)
    names that query's event, not the rows this one counts."""
    _refused_as_another_event(question, target)


@pytest.mark.parametrize(
    ("question", "target"),
    [
        (
            "How many emergency department visits ended with the patient leaving in 2024?",
            "accessi-pronto-soccorso",
        ),
        ("How many emergency department patients discharged in 2024?", "accessi-pronto-soccorso"),
        ("Quanti ricoveri ordinari abbandonati nel 2024?", "ricoveri-anno"),
        ("Numero di ricoveri ordinari triagiati nel 2023", "ricoveri-anno"),
    ],
)
def test_a_participle_only_another_query_uses_beside_a_noun_refuses(
    question: str, target: str
) -> None:
    """A regular participle or gerund (-ato/-ito/-uto and their plurals, -ed, -ing) attached to
    a noun of the question says what happened to those rows ("visits ended with the patient
    leaving"): one only another query's texts use is that query's event."""
    _refused_as_another_event(question, target)


@pytest.mark.parametrize(
    ("question", "target"),
    [
        ("Quanti ricoveri ordinari sono stati dimessi dalla Geriatria nel 2024?", "ricoveri-anno"),
        ("How many inpatient admissions were discharged in 2023?", "ricoveri-anno"),
        ("Spesa per i farmaci somministrati nel 2022", "spesa-farmaci"),
    ],
)
def test_the_query_s_own_verb_is_computed(question: str, target: str) -> None:
    decision = decided(question, target)
    assert computed(decision) is not None and decision.query_id == target, decision.reason


def _refused_as_another_event(question: str, target: str) -> None:
    decision = decided(question, target)
    assert computed(decision) is None, question
    fit = next(f for f in decision.fits if f.query_id == target)
    assert fit.refused is not None and fit.refused.startswith("another event"), fit.refused
