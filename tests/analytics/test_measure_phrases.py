"""Level 3, measure phrases: a few set phrases of both languages name the measure as a whole,
not a count or a list of the next noun — "quanti ... su cento" asks a share, "quante volte"
a count of the rows the rest names, "quanti soldi" an amount of money (a figure of kind
`amount`), and "mostrami" / "show me" before another measure is a request, not a list.

Wordings from templates and word lists written for these tests (not the held-out sets'), on
the docs-only catalog of benchmarks/analytics_heldout.py with fixed similarities, as in
test_ordinary_words.py: the decision's gates are tested, not the embedder."""

from __future__ import annotations

import pytest

from tests.analytics.test_ordinary_words import WARDS, computed, decided
from thoth.analytics.measure import measure_groups

YEARS = [2022, 2023, 2024]


@pytest.mark.parametrize(
    ("question", "measures"),
    [
        ("Quanti ricoveri su cento finiscono con una riammissione?", {"share"}),
        ("Quanti accessi su 100 si chiudono con un abbandono?", {"share"}),
        ("How many visits out of a hundred end with the patient leaving?", {"share"}),
        ("How many admissions out of 100 are readmitted?", {"share"}),
        ("Quante volte è stato usato il pronto soccorso?", {"count"}),
        ("How many times was the emergency department used?", {"count"}),
        ("Mostrami la degenza media per reparto", {"average"}),
        ("Show me the average length of stay by ward", {"average"}),
        ("Fammi vedere la spesa totale in farmaci", {"sum", "count"}),
        # alone, a request to show is a list; "elenca" is a list beside another measure too
        ("Mostrami i ricoveri oltre soglia", {"list"}),
        ("Show me the admissions over the threshold", {"list"}),
        ("Elenca i reparti con la degenza media più alta", {"list", "average", "maximum"}),
    ],
)
def test_set_phrases_name_the_measure_as_a_whole(question: str, measures: set[str]) -> None:
    assert frozenset().union(*measure_groups(question)) == measures


@pytest.mark.parametrize("year", YEARS)
def test_how_many_out_of_a_hundred_is_a_share_never_a_count(year: int) -> None:
    question = (
        f"Quanti accessi su cento sono finiti con un abbandono del pronto soccorso nel {year}?"
    )
    # the count of visits most similar: never its number
    as_count = decided(question, "accessi-pronto-soccorso")
    assert computed(as_count) in (None, {"query": "abbandoni-pronto-soccorso", "anno": year})
    share = decided(question, "abbandoni-pronto-soccorso")
    assert computed(share) == {"query": "abbandoni-pronto-soccorso", "anno": year}, share.reason


@pytest.mark.parametrize("base", ["su 100", "out of 100"])
def test_the_base_of_a_share_written_in_digits_is_no_value(base: str) -> None:
    """ "su 100" is "su cento" (numbers in words are read as digits): the base of the share
    the measure reads, not a number the query would have to take."""
    question = f"Quanti accessi {base} sono finiti con un abbandono del pronto soccorso nel 2024?"
    share = decided(question, "abbandoni-pronto-soccorso")
    assert computed(share) == {"query": "abbandoni-pronto-soccorso", "anno": 2024}, share.reason


@pytest.mark.parametrize("year", YEARS)
def test_how_many_times_counts_the_rows_the_question_names(year: int) -> None:
    question = f"Quante volte si è andati al pronto soccorso nel {year}?"
    decision = decided(question, "accessi-pronto-soccorso")
    assert computed(decision) == {
        "query": "accessi-pronto-soccorso",
        "anno": year,
        "triage": None,
    }, decision.reason


@pytest.mark.parametrize("ward", WARDS)
def test_how_much_money_asks_the_amount_of_a_figure_in_money(ward: str) -> None:
    question = f"Quanti soldi ha speso la {ward} in farmaci nel 2023?"
    decision = decided(question, "spesa-farmaci")
    assert computed(decision) == {"query": "spesa-farmaci", "anno": 2023, "reparto": ward}, (
        decision.reason
    )
    english = decided("How much money was spent on drugs in 2024?", "spesa-farmaci")
    assert computed(english) == {"query": "spesa-farmaci", "anno": 2024, "reparto": None}, (
        english.reason
    )


def test_money_is_no_word_of_a_query_whose_figure_is_not_money() -> None:
    """A count of visits has no amount: "quanti soldi" there is a figure it does not hold."""
    decision = decided(
        "Quanti soldi ha incassato il pronto soccorso nel 2024?", "accessi-pronto-soccorso"
    )
    assert computed(decision) is None


@pytest.mark.parametrize("year", YEARS)
def test_show_me_before_an_average_asks_the_average(year: int) -> None:
    decision = decided(
        f"Mostrami la degenza media per reparto del {year}", "degenza-media-per-reparto"
    )
    assert computed(decision) == {"query": "degenza-media-per-reparto", "anno": year}, (
        decision.reason
    )


@pytest.mark.parametrize("year", YEARS)
def test_a_generic_measure_noun_defers_to_the_figure_it_is_of(year: int) -> None:
    """ "tempo medio d'attesa" is the average wait; "lunghezza media della degenza" the
    average stay: the generic noun (time, length, amount) names the figure after di/of."""
    wait = decided(
        f"Tempo medio d'attesa per codice di triage in pronto soccorso, {year}",
        "attesa-media-per-triage",
    )
    assert computed(wait) == {"query": "attesa-media-per-triage", "anno": year}, wait.reason
    stay = decided(
        f"Lunghezza media della degenza per reparto nel {year}", "degenza-media-per-reparto"
    )
    assert computed(stay) == {"query": "degenza-media-per-reparto", "anno": year}, stay.reason


@pytest.mark.parametrize(
    "question",
    [
        # the visit is a word of the query (the wait is before it), not its figure
        "Tempo medio di visita per codice di triage nel 2024",
        # no figure after it: the time of what?
        "Tempo medio in pronto soccorso per codice di triage nel 2024",
    ],
)
def test_a_generic_measure_noun_of_no_figure_of_the_query_is_still_what_is_measured(
    question: str,
) -> None:
    decision = decided(question, "attesa-media-per-triage")
    assert computed(decision) is None
    assert decision.reason is not None and "tempo" in decision.reason


@pytest.mark.parametrize(
    "by",
    ["a seconda del codice di triage", "in base al codice triage", "depending on the triage code"],
)
def test_grouping_idioms_group_like_per(by: str) -> None:
    question = f"Attesa media in pronto soccorso {by} nel 2023"
    decision = decided(question, "attesa-media-per-triage")
    assert computed(decision) == {"query": "attesa-media-per-triage", "anno": 2023}, decision.reason
    assert "triage" in decision.grouping


def test_a_grouping_idiom_by_something_no_query_groups_by_refuses() -> None:
    decision = decided(
        "Attesa media in pronto soccorso in base al turno nel 2023", "attesa-media-per-triage"
    )
    assert computed(decision) is None


@pytest.mark.parametrize(
    "request_words", ["Mi sai dire", "Potresti dirmi", "Vorrei sapere", "Puoi calcolare"]
)
def test_the_words_of_a_request_are_function_words(request_words: str) -> None:
    question = f"{request_words} quanti accessi in codice verde ci sono stati in PS nel 2024?"
    decision = decided(question, "accessi-pronto-soccorso")
    assert computed(decision) == {
        "query": "accessi-pronto-soccorso",
        "anno": 2024,
        "triage": "verde",
    }, decision.reason
