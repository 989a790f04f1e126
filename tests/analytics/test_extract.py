"""Deterministic parameter extraction: enumeration values by their stems, the catalog's and
the glossary's synonyms, years, dates and numbers, defaults; missing and invalid values are
named, never guessed."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from tests.analytics.conftest import CATALOG
from thoth.analytics.catalog import CatalogQuery, build_catalog
from thoth.analytics.extract import Matcher, extract, find_enum_value, validate

QUERIES = build_catalog("analytics/queries", None, CATALOG).queries
MATCHER = Matcher("it")
REGIME: dict[str, list[str]] = {"ordinario": [], "day hospital": ["diurno", "DH"]}
WARDS: dict[str, list[str]] = {
    "Cardiologia": [],
    "Pediatria": [],
    "Ortopedia": [],
    "Medicina d'urgenza": [],
}


def test_enum_values_by_stem_and_synonym_and_years() -> None:
    query = QUERIES["ricoveri-per-reparto"]
    got = extract("Ricoveri ordinari per reparto nel 2023", query, {"regime": REGIME}, MATCHER)
    assert got.values == {"anno": 2023, "regime": "ordinario"}
    assert got.origin == {"anno": "question", "regime": "question"}
    dh = extract("ricoveri in DH per reparto nel 2024", query, {"regime": REGIME}, MATCHER)
    assert dh.values["regime"] == "day hospital"
    default = extract("ricoveri per reparto nel 2024", query, {"regime": REGIME}, MATCHER)
    assert default.values["regime"] == "ordinario" and default.origin["regime"] == "default"


def test_a_year_said_relative_to_today() -> None:
    query = QUERIES["ricoveri-per-reparto"]
    today = date(2025, 3, 1)
    for question, year in [
        ("Ricoveri per reparto l'anno scorso", 2024),
        ("Ricoveri per reparto dell'anno precedente", 2024),
        ("Admissions per ward last year", 2024),
        ("Ricoveri per reparto quest'anno", 2025),
        ("Admissions per ward this year", 2025),
        ("Ricoveri per reparto di due anni fa", 2023),
    ]:
        got = extract(question, query, {"regime": REGIME}, MATCHER, today=today)
        assert got.values["anno"] == year, question
        assert got.unbound == [], question


def test_a_date_or_number_no_parameter_takes_is_left_unbound() -> None:
    """ "nel 3° trimestre 2024" asked of a yearly query: the 3 constrains what the query cannot
    apply, so the branch must not compute (another question's number). A second year too."""
    query = QUERIES["ricoveri-per-reparto"]
    quarter = extract("Ricoveri per reparto nel 3° trimestre 2024", query, {}, MATCHER)
    assert quarter.values["anno"] == 2024 and quarter.unbound == ["Q3"]
    years = extract("Ricoveri per reparto nel 2023 e nel 2024", query, {}, MATCHER)
    assert years.unbound == ["2024"]
    plain = extract("Ricoveri per reparto nel 2024", query, {}, MATCHER)
    assert plain.unbound == []


def test_missing_required_and_out_of_range_are_named() -> None:
    query = QUERIES["ricoveri-per-reparto"]
    missing = extract("ricoveri per reparto", query, {"regime": REGIME}, MATCHER)
    assert missing.missing == ["anno"] and not missing.complete
    old = extract("ricoveri per reparto nel 1999", query, {"regime": REGIME}, MATCHER)
    assert old.invalid == {"anno": "anno = 1999 is below the min 2000"}


def test_the_most_specific_value_wins_and_a_tie_is_not_guessed() -> None:
    query = QUERIES["ricoveri-reparto"]
    choices = {"reparto": WARDS, "regime": REGIME}
    got = extract("ricoveri della medicina d'urgenza nel 2024", query, choices, MATCHER)
    assert got.values["reparto"] == "Medicina d'urgenza"
    tied = extract("ricoveri di pediatria e cardiologia nel 2024", query, choices, MATCHER)
    assert "reparto" in tied.invalid and "Cardiologia, Pediatria" in tied.invalid["reparto"]


def test_dates_numbers_and_years_do_not_steal_from_each_other() -> None:
    query = CatalogQuery.model_validate(
        {
            "id": "q",
            "description": "d",
            "examples": ["e"],
            "parameters": {
                "dal": {"type": "date", "description": "inizio"},
                "anno": {"type": "year", "description": "anno", "required": False},
                "soglia": {"type": "integer", "description": "giorni", "default": 0},
                "quota": {"type": "decimal", "description": "quota", "required": False},
            },
            "sql": "SELECT 1 AS x",
            "result": {"shape": "value", "columns": {"x": {"label": "x", "kind": "quantity"}}},
        }
    )
    got = extract("dal 3 marzo 2024, oltre 30 giorni, quota 2,5 nel 2025", query, {}, MATCHER)
    assert got.values == {
        "dal": date(2024, 3, 3),
        "anno": 2025,
        "soglia": 30,
        "quota": Decimal("2.5"),
    }
    iso = extract("dal 2024-01-31", query, {}, MATCHER)
    # An optional parameter the question does not give is bound to NULL, never left unset.
    assert iso.values == {"dal": date(2024, 1, 31), "anno": None, "soglia": 0, "quota": None}
    assert iso.origin["anno"] == "absent"


def test_a_model_s_values_are_validated_not_trusted() -> None:
    query = QUERIES["ricoveri-reparto"]
    choices = {"reparto": WARDS, "regime": REGIME}
    ok = validate(query, {"reparto": "Pediatria", "anno": 2024, "regime": None}, choices)
    assert ok.complete and ok.values == {
        "reparto": "Pediatria",
        "anno": 2024,
        "regime": "ordinario",
    }
    bad = validate(query, {"reparto": "Neurologia", "anno": "duemila", "extra": 1}, choices)
    assert set(bad.invalid) == {"reparto", "anno", "extra"}
    assert "not an allowed value" in bad.invalid["reparto"]
    assert "not a year" in bad.invalid["anno"]


QUARTERLY = CatalogQuery.model_validate(
    {
        "id": "ricoveri-trimestre",
        "description": "Ricoveri dimessi in un trimestre o in un mese di un anno",
        "examples": ["Quanti ricoveri nel primo trimestre 2024?"],
        "parameters": {
            "anno": {"type": "year", "description": "Anno"},
            "trimestre": {"type": "quarter", "description": "Trimestre", "required": False},
            "mese": {"type": "month", "description": "Mese", "required": False},
        },
        "measure": "count",
        "sql": "SELECT count(*) AS n FROM analytics.v_ricoveri WHERE anno = :anno "
        "AND (:trimestre IS NULL OR trimestre = :trimestre) AND (:mese IS NULL OR mese = :mese)",
        "result": {"shape": "value", "columns": {"n": {"label": "Ricoveri", "kind": "quantity"}}},
    }
)


def test_quarters_and_months_fill_their_parameters_in_italian_and_english() -> None:
    for question, quarter in [
        ("Ricoveri nel terzo trimestre 2024", 3),
        ("Ricoveri nel 3° trimestre 2024", 3),
        ("Admissions in Q2 2024", 2),
        ("Admissions in the fourth quarter of 2024", 4),
    ]:
        got = extract(question, QUARTERLY, {}, MATCHER)
        assert got.values == {"anno": 2024, "trimestre": quarter, "mese": None}, question
        assert got.unbound == [], question
    for question, month in [("Ricoveri a marzo 2024", 3), ("Admissions in May 2024", 5)]:
        got = extract(question, QUARTERLY, {}, MATCHER)
        assert got.values["mese"] == month and got.unbound == [], question
    # "may" the verb is no month; a model's "Q3" is the third quarter; 5 is no quarter.
    assert extract("Ricoveri 2024, may I ask?", QUARTERLY, {}, MATCHER).values["mese"] is None
    assert validate(QUARTERLY, {"anno": 2024, "trimestre": "Q3"}, {}).values["trimestre"] == 3
    assert "trimestre" in validate(QUARTERLY, {"anno": 2024, "trimestre": 5}, {}).invalid


def test_a_month_no_parameter_takes_is_left_unbound() -> None:
    """ "A marzo" asked of a yearly query is another question; a month enumeration that takes
    it by name binds it."""
    yearly = QUERIES["ricoveri-per-reparto"]
    assert extract("Ricoveri per reparto a marzo 2024", yearly, {}, MATCHER).unbound == ["month 3"]


def test_an_english_workspace_matches_italian_words_with_the_italian_stemmer() -> None:
    """Thoth's two languages: a catalog in English with Italian synonyms is asked in Italian;
    a value matches in one language or the other, never by mixing the two."""
    english = Matcher("en")
    countries = {"SVK": ["Slovakia", "slovacchi"], "CZE": ["Czech Republic", "ceche"]}
    question = english.stems("Che percentuale delle stazioni slovacche è Premium?")
    assert find_enum_value(question, countries, english) == ("SVK", [])
    assert english.within("pagano", english.stems("clienti che hanno pagato")) == 1
    # Each language alone: "ordinari" meets "ordinario" in Italian even if English keeps them
    # apart, and an English stopword is no content word in an Italian workspace.
    assert MATCHER.within("ordinario", MATCHER.stems("ricoveri ordinari")) == 1
    assert not MATCHER.is_content("the") and MATCHER.is_content("ricoveri")


VISITS = """\
id: accessi
description: Numero di accessi al pronto soccorso in un anno, per codice di triage se indicato
examples: [Quanti accessi in codice rosso nel 2023?]
parameters:
  anno: {type: year, description: Anno di arrivo}
  triage: {type: enum, description: Codice di triage, values_from: a.v.codice_triage, required: false}
measure: count
sql: "SELECT count(*) AS accessi FROM a.v WHERE anno = :anno AND (:triage IS NULL OR codice_triage = :triage)"
result: {shape: value, columns: {accessi: {label: Accessi, unit: accessi, kind: quantity}}}
"""
# The store's values are Italian; their English names are what docs/analytics.md tells the
# catalog writer to declare as synonyms ("Write for the words users use").
COLOURS = {"bianco": "white", "verde": "green", "azzurro": "light blue", "arancione": "orange"}
FRAMES_IT = ["Quanti accessi in codice {} nel 2023?", "Accessi in PS con codice {}, 2023"]
FRAMES_EN = ["How many {} code visits in 2023?", "Number of ER visits triaged {} in 2023"]


def test_a_store_value_is_found_in_the_other_language_only_through_a_declared_synonym() -> None:
    """Stemming never translates: an English colour finds the Italian value only when the
    catalog declares it (then in an Italian workspace too); undeclared it finds nothing, so
    the optional filter is not read from it (the decision's gates then see an unknown word)."""
    query = build_catalog("analytics/queries", None, {"analytics/queries/accessi.yaml": VISITS})
    visits = query.queries["accessi"]
    declared = {"triage": {it: [en] for it, en in COLOURS.items()}}
    bare: dict[str, dict[str, list[str]]] = {"triage": {it: [] for it in COLOURS}}
    for italian, english in COLOURS.items():
        for frame in FRAMES_IT:
            got = extract(frame.format(italian), visits, bare, MATCHER)
            assert got.values.get("triage") == italian, frame
        for frame in FRAMES_EN:
            question = frame.format(english)
            for matcher in (MATCHER, Matcher("en")):
                got = extract(question, visits, declared, matcher)
                assert got.values.get("triage") == italian, (question, matcher)
                assert extract(question, visits, bare, matcher).values.get("triage") is None


def test_a_number_inside_the_synonym_that_took_a_value_is_that_value() -> None:
    """ "codice 1" names a triage colour: its 1 is the value's name, not a number left
    unbound (which refused the query). A number the taken name does not say still is."""
    query = QUERIES["ricoveri-per-reparto"]
    for n in range(1, 6):
        for synonym, question in (
            (f"codice {n}", f"Ricoveri per reparto in codice {n} nel 2024"),
            (f"code {n}", f"Admissions per ward in code {n} in 2024"),
        ):
            regime = {"ordinario": [synonym], "day hospital": ["DH"]}
            got = extract(question, query, {"regime": regime}, MATCHER)
            assert got.values["regime"] == "ordinario", question
            assert got.unbound == [], question
            other = extract(f"{question} con {n + 1} giorni", query, {"regime": regime}, MATCHER)
            assert other.unbound == [str(n + 1)], question
