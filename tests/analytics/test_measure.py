"""Issue 23, point 1 (the measure): a question that names a measure the chosen query does not
compute is never answered with that query's number; `tht analytics check` requires each query
to declare its measure and checks it against the result columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analytics.conftest import AnalyticsWorkspace, make_analytics_workspace
from thoth.analytics.measure import agrees, measure_groups

COUNT_QUESTION = "Quanti ricoveri ha avuto la Pediatria nel 2024?"
SHARE_QUESTION = "Qual è la percentuale di ricoveri della Pediatria nel 2024?"


@pytest.mark.parametrize(
    ("question", "measures"),
    [
        ("Quanti ricoveri ha avuto la Pediatria nel 2024?", {"count"}),
        ("How many admissions did Paediatrics have in 2024?", {"count"}),
        ("Qual è la percentuale di abbandoni nel 2024?", {"share"}),
        ("What percentage of the heroes have blue eyes?", {"share"}),
        ("Qual è il tasso di riammissione?", {"share", "ratio"}),
        ("Qual è la degenza media in Cardiologia?", {"average"}),
        ("What is the average stay?", {"average"}),
        ("Quali sono i tempi medi di attesa?", {"average"}),
        ("Spesa totale dei farmaci nel 2024", {"sum", "count"}),
        ("Elenca i ricoveri oltre soglia", {"list"}),
        ("Andamento mensile degli accessi", {"trend"}),
        ("Qual è il reparto con la degenza più lunga?", {"maximum"}),
        ("Ricoveri per reparto nel 2023", set()),
        # "total" beside another measure is an adjective, not a sum
        ("What is the average total price of the transactions?", {"average"}),
        # "più di 30" compares; "di più" and "più pazienti" rank
        ("Quanti ricoveri sono durati più di 30 giorni?", {"count"}),
        ("Quali reparti hanno dimesso più pazienti?", {"maximum"}),
        ("Quale segmento ha avuto il consumo più basso?", {"minimum"}),
        # "how much" asks an amount, unless another measure word says which
        ("How much did the KAM customers consume in total?", {"sum"}),
        ("How much does a stay last on average?", {"average"}),
        ("Quanto sono stati occupati i letti nel 2023?", set()),
        ("What was the average monthly consumption?", {"average"}),
    ],
)
def test_the_measure_a_question_asks_in_italian_and_english(
    question: str, measures: set[str]
) -> None:
    assert frozenset().union(*measure_groups(question)) == measures


def test_every_measure_named_must_be_computed_and_silence_constrains_nothing() -> None:
    assert agrees([{"count"}], {"count", "share"})
    assert not agrees([{"share"}], {"count"})
    assert agrees([{"share", "ratio"}], {"ratio"})  # "tasso": either
    assert agrees([], {"count"})
    assert agrees([{"share"}], set())  # undeclared: check asks for it; routing as before
    # Two measures named: a count query answers half of the question, so it answers none.
    two = measure_groups("What is the average consumption, and what share of it is in euro?")
    assert two == (frozenset({"share"}), frozenset({"average"}))
    assert not agrees(two, {"average"}) and agrees(two, {"average", "share"})
    # "how many" beside another measure names the unit, not a count
    assert measure_groups("Quanti giorni dura in media un ricovero?") == (frozenset({"average"}),)


def ask(aw: AnalyticsWorkspace, question: str) -> dict[str, object]:
    service = aw.service()
    try:
        return service.ask(question).as_dict()
    finally:
        service.close()


def test_a_share_is_never_answered_with_a_count(analytics_ws: AnalyticsWorkspace) -> None:
    counted = ask(analytics_ws, COUNT_QUESTION)
    assert counted["status"] == "computed"
    shared = ask(analytics_ws, SHARE_QUESTION)
    assert shared["status"] != "computed" and "figures" not in shared
    decision = shared["diagnostics"]["analytics"]["decision"]  # type: ignore[index]
    assert decision["measure_asked"] == ["share"] and decision["query_id"] is None
    refused = {f["query_id"]: f["refused"] for f in decision["fits"]}
    assert "measure mismatch" in refused["ricoveri-reparto"]
    reason = shared["diagnostics"]["analytics"]["reason"]  # type: ignore[index]
    assert "measure mismatch" in reason and "share" in reason


def test_check_requires_a_measure_that_the_columns_can_hold(tmp_path: Path) -> None:
    from tests.analytics.test_data_date import tht

    aw = make_analytics_workspace(tmp_path / "ws")
    path = aw.root / "analytics" / "queries" / "ricoveri-reparto.yaml"
    text = path.read_text("utf-8")
    path.write_text(text.replace("measure: count\n", ""), "utf-8")
    code, checked = tht("analytics", "check", "-w", str(aw.root))
    assert code == 1
    [missing] = [p for p in checked["problems"] if p["field"] == "measure"]
    assert missing["code"] == "measure_missing" and "ricoveri-reparto" in missing["where"]
    path.write_text(text.replace("measure: count\n", "measure: list\n"), "utf-8")
    code, checked = tht("analytics", "check", "-w", str(aw.root))
    [wrong] = [p for p in checked["problems"] if p["field"] == "measure"]
    assert wrong["code"] == "measure_columns" and "shape table" in wrong["message"]


def test_check_refuses_an_example_that_asks_a_measure_the_query_does_not_declare(
    tmp_path: Path,
) -> None:
    """An example is a question the query must take: one whose measure words disagree with
    `measure` would be refused by the query's own gate at every ask."""
    from tests.analytics.test_data_date import tht

    aw = make_analytics_workspace(tmp_path / "ws")
    path = aw.root / "analytics" / "queries" / "ricoveri-per-reparto.yaml"
    text = path.read_text("utf-8")
    path.write_text(
        text.replace(
            "  - Ricoveri per reparto nel 2023\n",
            "  - Ricoveri per reparto nel 2023\n  - Percentuale di ricoveri per reparto nel 2022\n",
        ),
        "utf-8",
    )
    code, checked = tht("analytics", "check", "-w", str(aw.root))
    assert code == 1
    [wrong] = [p for p in checked["problems"] if p["field"] == "examples[2]"]
    assert wrong["code"] == "example_measure"
    assert "share" in wrong["message"] and "count" in wrong["message"]
    assert "Percentuale di ricoveri" in wrong["message"]
