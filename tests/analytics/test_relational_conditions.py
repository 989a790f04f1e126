"""Issue 46 (level 3): a relational or temporal preposition — dopo, prima di, senza, tranne,
esclusi, oltre, entro, fino a; after, before, without, except, beyond, within, until, since —
followed by a content word puts a condition on the rows ("abbandoni dopo la visita" are not
all abandonments), even when every word is the query's own; followed by a value it asks a
range ("dopo il 2022": the years after it, not 2022). Either refuses, with a reason naming the
phrase, unless the query's own description, examples or parameter descriptions say it: the
same relation before the same word, or a relation of the same direction before a value (a
parameter that takes a bound, "since 2012-08-25"). The frame of a period ("durante il 2024")
stays a period.

The wordings are written for these tests (no benchmark set uses them), on the docs-only catalog
of benchmarks/analytics_heldout.py and BIRD's catalog, with fixed similarities: the gates are
what is tested, not the embedder."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.analytics.test_ordinary_words import computed, decided
from thoth.analytics.catalog import CatalogQuery
from thoth.analytics.decide import Decision, Vocabulary, decide, decide_chosen
from thoth.analytics.extract import Matcher

BIRD_DIR = (
    Path(__file__).resolve().parents[2]
    / "benchmarks"
    / "data"
    / "bird_debit_card"
    / "analytics"
    / "queries"
)


@pytest.mark.parametrize(
    ("question", "target", "phrase"),
    [
        (
            "Quota di abbandoni dopo l'accesso in pronto soccorso nel 2023",
            "abbandoni-pronto-soccorso",
            "dopo l'accesso",
        ),
        (
            "Percentuale di abbandoni prima dell'accesso nel 2022",
            "abbandoni-pronto-soccorso",
            "prima dell'accesso",
        ),
        (
            "Quanti accessi al pronto soccorso esclusi i codici rossi nel 2024?",
            "accessi-pronto-soccorso",
            "esclusi i codici",
        ),
        (
            "Quanti accessi al pronto soccorso tranne il codice bianco nel 2023?",
            "accessi-pronto-soccorso",
            "tranne il codice",
        ),
        (
            "Quanti accessi senza codice di triage ci sono stati nel 2024?",
            "accessi-pronto-soccorso",
            "senza codice",
        ),
        (
            "How many emergency department visits except red codes were there in 2024?",
            "accessi-pronto-soccorso",
            "except red",
        ),
        (
            "Quanto ha speso in farmaci la Pediatria oltre la spesa del 2023?",
            "spesa-farmaci",
            "oltre la spesa",
        ),
        (
            "Spesa per farmaci entro il reparto di Geriatria nel 2024",
            "spesa-farmaci",
            "entro il reparto",
        ),
    ],
)
def test_a_relation_before_a_word_of_the_query_is_a_condition_on_the_rows(
    question: str, target: str, phrase: str
) -> None:
    """Every content word is the query's own, yet the relation restricts the rows: the figure
    of all of them would be a wrong number."""
    decision = decided(question, target)
    assert computed(decision) is None, decision.best
    assert decision.reason is not None and phrase in decision.reason, decision.reason


@pytest.mark.parametrize(
    ("question", "target"),
    [
        ("Quanti accessi al pronto soccorso dopo il 2022?", "accessi-pronto-soccorso"),
        ("Quanti accessi al pronto soccorso prima del 2024?", "accessi-pronto-soccorso"),
        ("Quanti accessi al pronto soccorso fino al 2023?", "accessi-pronto-soccorso"),
        ("Quanti accessi al pronto soccorso a partire dal 2023?", "accessi-pronto-soccorso"),
        ("How many emergency department visits since 2023?", "accessi-pronto-soccorso"),
        ("Percentuale di abbandoni tranne il 2023", "abbandoni-pronto-soccorso"),
        ("Spesa per farmaci della Geriatria oltre il 2022", "spesa-farmaci"),
    ],
)
def test_a_relation_before_a_year_asks_a_range_a_one_year_query_does_not_take(
    question: str, target: str
) -> None:
    decision = decided(question, target)
    assert computed(decision) is None, decision.best
    assert decision.reason is not None and "range" in decision.reason, decision.reason


@pytest.mark.parametrize(
    "question",
    [
        "Quanti minuti si aspetta prima della visita, per codice di triage, nel 2024?",
        "Quanto si attende in media prima della visita per codice di triage nel 2023?",
    ],
)
def test_a_relation_the_query_s_own_description_says_is_its_own(question: str) -> None:
    """attesa-media-per-triage is described as the wait "prima della visita"."""
    decision = decided(question, "attesa-media-per-triage")
    assert computed(decision) is not None, decision.reason
    assert computed(decision) == {
        "query": "attesa-media-per-triage",
        "anno": int(question.rstrip("?")[-4:]),
    }


@pytest.mark.parametrize(
    "question",
    [
        "Quanti accessi al pronto soccorso durante il 2024?",
        "Quanti accessi in codice rosso ci sono stati nel corso del 2024?",
    ],
)
def test_the_frame_of_a_period_is_no_range(question: str) -> None:
    decision = decided(question, "accessi-pronto-soccorso")
    assert decision.outcome == "compute", decision.reason
    assert computed(decision) is not None and computed(decision)["anno"] == 2024  # type: ignore[index]


def _bird() -> tuple[dict[str, CatalogQuery], dict[str, dict[str, dict[str, list[str]]]]]:
    queries = {
        q.id: q
        for q in (
            CatalogQuery.model_validate(yaml.safe_load(p.read_text("utf-8")))
            for p in sorted(BIRD_DIR.glob("*.yaml"))
        )
    }
    choices: dict[str, dict[str, dict[str, list[str]]]] = {}
    for qid, query in queries.items():
        for name, param in query.parameters.items():
            if param.type == "enum" and param.values:
                choices.setdefault(qid, {})[name] = {
                    str(v): list((param.synonyms or {}).get(str(v), [])) for v in param.values
                }
    return queries, choices


def _bird_decided(question: str, target: str = "transactions-count") -> Decision:
    queries, choices = _bird()
    matcher = Matcher("en")
    vocab = Vocabulary.of(queries, choices, matcher)
    sims = {qid: 0.95 if qid == target else 0.85 for qid in queries}
    return decide(question, queries, sims, choices, vocab, 0.9, 0.005)


@pytest.mark.parametrize(
    "question",
    [
        "How many transactions in Slovakia after 2012-09-01?",
        "Number of transactions at Czech gas stations from 2012-08-30 on",
        "How many transactions in the Czech Republic cost above 800?",
    ],
)
def test_a_bound_the_query_s_parameter_takes_is_computed(question: str) -> None:
    """transactions-count's examples say "since 2012-08-25" and "more than 500": a relation
    of the same direction before a value is its parameter's own."""
    decision = _bird_decided(question)
    assert decision.outcome == "compute", decision.reason
    assert decision.query_id == "transactions-count"


@pytest.mark.parametrize(
    "question",
    [
        "How many transactions in Slovakia before 2012-09-01?",
        "How many transactions in the Czech Republic cost below 800?",
        "Quante transazioni in Slovacchia fino al 2012-09-01?",
    ],
)
def test_a_bound_of_the_other_direction_refuses(question: str) -> None:
    """The query counts from a date on and above a price: "before", "below", "fino al" ask the
    other side, which its parameters do not take."""
    decision = _bird_decided(question)
    assert decision.outcome != "compute", decision.extraction
    assert decision.reason is not None and "range" in decision.reason, decision.reason


def test_a_model_s_choice_meets_the_same_condition() -> None:
    """The gate reads the question's words, not the similarity: a model's choice is refused
    alike."""
    queries, choices = _bird()
    vocab = Vocabulary.of(queries, choices, Matcher("en"))
    decision = decide_chosen(
        "How many transactions in Slovakia before 2012-09-01?",
        queries["transactions-count"],
        {"country": "SVK", "from_date": "2012-09-01"},
        choices["transactions-count"],
        vocab,
    )
    assert decision.outcome == "text"
    assert decision.reason is not None and "before 2012" in decision.reason


def _threshold_query(described: str) -> CatalogQuery:
    return CatalogQuery.model_validate(
        {
            "id": "degenza-soglia",
            "description": "Degenza media dei ricoveri dimessi in un anno",
            "examples": ["Degenza media dei ricoveri nel 2024"],
            "parameters": {
                "anno": {"type": "year", "description": "Anno di dimissione"},
                "soglia": {"type": "integer", "description": described, "default": 0},
            },
            "measure": "average",
            "sql": "SELECT avg(giorni) AS giorni FROM analytics.v_ricoveri "
            "WHERE anno = :anno AND giorni > :soglia",
            "result": {
                "shape": "value",
                "columns": {"giorni": {"label": "Degenza media", "kind": "quantity"}},
            },
        }
    )


@pytest.mark.parametrize(
    ("described", "computes"),
    [("Giorni minimi di degenza", True), ("Giorni massimi di degenza", False)],
)
def test_a_parameter_described_as_a_bound_takes_that_side(described: str, computes: bool) -> None:
    """ "oltre 40 giorni" is the minimum a parameter described so takes; a maximum is the
    other side: the figure of the stays under 40 days would be a wrong number."""
    query = _threshold_query(described)
    matcher = Matcher("it")
    vocab = Vocabulary.of({query.id: query}, {}, matcher)
    decision = decide(
        "Degenza media dei ricoveri oltre 40 giorni nel 2024",
        {query.id: query},
        {query.id: 0.95},
        {},
        vocab,
        0.9,
        0.005,
    )
    if computes:
        assert decision.outcome == "compute", decision.reason
        assert decision.extraction is not None
        assert decision.extraction.values == {"anno": 2024, "soglia": 40}
    else:
        assert decision.outcome == "text"
        assert decision.reason is not None and "'oltre 40'" in decision.reason


def test_a_comparative_without_di_or_than_is_no_range() -> None:
    """ "di meno ad agosto" is the least, in August: "meno" relates to a value only before
    di/than ("meno di 30")."""
    decision = _bird_decided(
        "Quale segmento di clientela ha consumato di meno ad agosto 2012?", "consumption-by-segment"
    )
    assert decision.outcome == "compute", decision.reason
    assert decision.extraction is not None
    assert decision.extraction.values["month"] == "August"


def _one_query(description: str, example: str) -> CatalogQuery:
    return CatalogQuery.model_validate(
        {
            "id": "uno",
            "description": description,
            "examples": [example],
            "parameters": {"anno": {"type": "year", "description": "Anno di arrivo"}},
            "measure": "count",
            "sql": "SELECT count(*) AS n FROM analytics.v_uno WHERE anno = :anno",
            "result": {"shape": "value", "columns": {"n": {"label": "Numero", "kind": "quantity"}}},
        }
    )


def _one_decided(query: CatalogQuery, question: str) -> Decision:
    vocab = Vocabulary.of({query.id: query}, {}, Matcher("it"))
    return decide(question, {query.id: query}, {query.id: 0.95}, {}, vocab, 0.9, 0.005)


@pytest.mark.parametrize(
    ("question", "computes"),
    [
        ("Quanti pazienti se ne vanno senza una visita nel 2023?", True),
        ("Quanti pazienti se ne vanno senza il triage nel 2023?", False),
        ("Quanti pazienti se ne vanno dopo la visita nel 2023?", False),
    ],
)
def test_the_same_relation_before_one_of_the_same_words_is_the_query_s_own(
    question: str, computes: bool
) -> None:
    """The query's example says "senza essere visitati": "senza una visita" relates
    the same rows; "senza il triage" and "dopo la visita" do not."""
    query = _one_query(
        "Pazienti che se ne vanno senza essere visitati, il triage e la visita in un anno",
        "Quanti pazienti se ne vanno senza essere visitati nel 2024?",
    )
    decision = _one_decided(query, question)
    if computes:
        assert decision.outcome == "compute", decision.reason
    else:
        assert decision.outcome == "text"
        assert decision.reason is not None and "condition on the rows" in decision.reason


@pytest.mark.parametrize(
    ("question", "computes"),
    [
        ("Riammissioni entro trenta giorni nel 2023", True),
        ("Riammissioni dopo trenta giorni nel 2023", False),
        # Another number than the query's own, in words or digits: another figure.
        ("Riammissioni entro sessanta giorni nel 2023", False),
        ("Riammissioni entro 60 giorni nel 2023", False),
        ("Riammissioni entro novanta giorni nel duemilaventitre", False),
        ("Riammissioni entro trenta giorni nel duemilaventitre", True),
    ],
)
def test_a_number_in_words_is_a_value_of_a_relation(question: str, computes: bool) -> None:
    """ "entro trenta giorni" is the bound "entro 30 giorni" of the query's own description,
    not a condition on "giorni"; "dopo trenta giorni" is the other side."""
    query = _one_query(
        "Riammissioni entro 30 giorni dalla dimissione in un anno", "Riammissioni nel 2024"
    )
    decision = _one_decided(query, question)
    assert (decision.outcome == "compute") is computes, decision.reason
