"""Issue 46, point 3: the store's column a query's figure is computed from — the columns inside
the select expression of a quantity or amount result column, "costo" of `sum(costo_euro) AS
spesa` — names that query's own figure, as its result label does: "il costo complessivo dei
farmaci" asks the drug spend. Another query's figure it is not: beside a measure word in a
question given to another query it names another figure and refuses.

The wordings are generated from templates written for these tests (not the held-out sets'
sentences), on the docs-only catalog with fixed similarities."""

from __future__ import annotations

import pytest

from tests.analytics.test_ordinary_words import computed, decided


@pytest.mark.parametrize(
    "template",
    [
        "Costo {m} dei farmaci nel 2023",
        "Qual è stato il costo {m} dei farmaci della Pediatria nel 2024?",
        "Nel 2022 a quanto è ammontato il costo {m} in farmaci?",
    ],
)
@pytest.mark.parametrize("m", ["totale", "complessivo"])
def test_the_word_of_the_summed_column_names_the_query_s_figure(template: str, m: str) -> None:
    question = template.format(m=m)
    decision = decided(question, "spesa-farmaci")
    assert computed(decision) is not None, decision.reason
    assert decision.query_id == "spesa-farmaci"


@pytest.mark.parametrize(
    ("question", "target"),
    [
        ("Costo medio dei ricoveri per reparto nel 2024", "degenza-media-per-reparto"),
        ("Costo totale dei ricoveri ordinari nel 2024", "ricoveri-anno"),
        (
            "Costo medio degli accessi in pronto soccorso per codice di triage nel 2023",
            "attesa-media-per-triage",
        ),
    ],
)
def test_it_is_not_another_query_s_figure(question: str, target: str) -> None:
    assert computed(decided(question, target)) is None
