"""The first fork and the numeric answer, offline (similarity routing, deterministic
parameters), through the real answer service: computed figures with provenance and data date,
needs_parameter, fail-closed data date, a store that cannot be reached, the text path for text
questions and for figures no query computes, and only the activated revision's catalog."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from tests.analytics.conftest import (
    WAIT_QUESTION,
    AnalyticsWorkspace,
    make_analytics_workspace,
)
from tests.analytics.store import DATA_DATE, STORE_FILE, count
from tests.conftest import commit_all, git
from thoth.answer.service import Answer
from thoth.answer.wording import ITALIAN
from thoth.runtime import open_state


def ask(aw: AnalyticsWorkspace, question: str, **filters: Any) -> Answer:
    service = aw.service()
    try:
        return service.ask(question, **filters)
    finally:
        service.close()


def logged(aw: AnalyticsWorkspace, answer: Answer) -> dict[str, Any]:
    with open_state(aw.ws) as state:
        return state.get_answer(answer.id).answer


def test_a_covered_question_is_computed_with_provenance_and_data_date(
    analytics_ws: AnalyticsWorkspace,
) -> None:
    answer = ask(analytics_ws, "Quanti ricoveri ha avuto la Pediatria nel 2024?")
    data = answer.as_dict()
    expected = count("Pediatria", "ordinario", 2024)
    assert data["status"] == "computed"
    assert "sources" not in data  # no corpus retrieval on this path
    assert data["figures"]["rows"] == [[expected]]
    provenance = data["provenance"]
    assert provenance["query_id"] == "ricoveri-reparto"
    assert provenance["parameters"] == {"reparto": "Pediatria", "anno": 2024, "regime": "ordinario"}
    assert provenance["data_date"] == DATA_DATE
    assert provenance["row_count"] == 1
    assert provenance["catalog_revision"] == git(analytics_ws.root, "rev-parse", "HEAD").strip()
    assert ":reparto" in provenance["sql"] and "analytics.v_ricoveri" in provenance["sql"]
    # The data date stands next to the number in the text.
    assert f"Ricoveri: {expected} ricoveri (dati aggiornati al {DATA_DATE})" in answer.text
    assert "ricoveri-reparto" in answer.text
    # The answer log holds it exactly as served.
    assert logged(analytics_ws, answer) == data


def test_a_table_answer_and_an_enum_found_by_a_catalog_synonym(
    analytics_ws: AnalyticsWorkspace,
) -> None:
    answer = ask(analytics_ws, "Quanti ricoveri ordinari ha dimesso ogni reparto nel 2024?")
    assert answer.status == "computed" and answer.provenance is not None
    assert answer.provenance["parameters"] == {"anno": 2024, "regime": "ordinario"}
    assert answer.figures is not None
    assert answer.figures["rows"] == [["Pediatria", 3], ["Cardiologia", 1]]
    assert "| Pediatria | 3 |" in answer.text and DATA_DATE in answer.text
    diurno = ask(analytics_ws, "Quanti ricoveri diurni ha dimesso ogni reparto nel 2024?")
    assert diurno.provenance is not None
    assert diurno.provenance["parameters"]["regime"] == "day hospital"
    # "DH" is no synonym in the catalog: the Evidence glossary unit says it means day hospital.
    dh = ask(analytics_ws, "Quanti ricoveri in DH ha dimesso ogni reparto nel 2024?")
    assert dh.provenance is not None and dh.provenance["parameters"]["regime"] == "day hospital"
    assert dh.figures is not None and dh.figures["rows"] == [["Cardiologia", 1]]


def test_a_missing_required_parameter_is_named(analytics_ws: AnalyticsWorkspace) -> None:
    answer = ask(analytics_ws, "Quanti ricoveri ha avuto la Pediatria?")
    data = answer.as_dict()
    assert data["status"] == "needs_parameter"
    assert data["error_code"] == "missing_parameter"
    assert "anno (Anno di dimissione)" in answer.text
    assert data["needs_parameter"] == {
        "query_id": "ricoveri-reparto",
        "missing": ["anno"],
        "invalid": {},
        "candidates": [],
    }
    assert "provenance" not in data and "sources" not in data
    assert logged(analytics_ws, answer)["status"] == "needs_parameter"


def test_a_value_out_of_range_is_an_error_not_a_guess(analytics_ws: AnalyticsWorkspace) -> None:
    answer = ask(analytics_ws, "Qual è la degenza media dei ricoveri oltre 400 giorni nel 2024?")
    assert answer.status == "needs_parameter" and answer.error_code == "invalid_parameter"
    assert "soglia = 400 is above the max 365" in answer.text


def test_a_request_naming_a_document_source_takes_the_text_path(
    analytics_ws: AnalyticsWorkspace,
) -> None:
    """The caller asks the documents of a source: the store does not answer in their place,
    even a question it covers."""
    answer = ask(analytics_ws, "Quanti ricoveri ha avuto la Pediatria nel 2024?", source="docs")
    assert answer.status != "computed" and answer.provenance is None
    assert answer.sources is not None  # the text path ran
    assert "source" in answer.diagnostics["analytics"]["reason"]


def test_a_constraint_the_query_cannot_apply_is_not_computed(
    analytics_ws: AnalyticsWorkspace,
) -> None:
    """A yearly query asked for a quarter: no number for another question; the text path
    answers and says the figure may not be available."""
    answer = ask(analytics_ws, "Quanti ricoveri ha avuto la Pediatria nel 3° trimestre 2024?")
    assert answer.status != "computed" and answer.provenance is None
    assert answer.text.startswith(ITALIAN.figure_maybe_not_available)
    decision = answer.diagnostics["analytics"]["decision"]
    refused = {f["query_id"]: f["refused"] for f in decision["fits"]}
    assert refused["ricoveri-reparto"].startswith("unbound: Q3 ")


def test_the_misfiring_text_question_goes_to_the_text_path(
    analytics_ws: AnalyticsWorkspace,
) -> None:
    answer = ask(analytics_ws, WAIT_QUESTION)
    assert answer.status == "found"
    assert answer.sources is not None and answer.sources[0].doc_id == "docs:attese.md"
    assert "120" in answer.text
    assert not answer.text.startswith(ITALIAN.figure_maybe_not_available)
    assert answer.provenance is None
    assert answer.diagnostics["analytics"]["route"]["query_id"] is None


def test_a_figure_no_query_computes_says_it_is_not_available(
    analytics_ws: AnalyticsWorkspace,
) -> None:
    answer = ask(analytics_ws, "Quanti farmaci sono stati prescritti nei ricoveri del 2024?")
    assert answer.status in ("found", "nothing_found")
    assert answer.sources is not None  # the text path ran
    # Offline a similarity band only suggests a figure was asked: the sentence is hedged.
    assert answer.text.startswith(ITALIAN.figure_maybe_not_available)
    assert answer.provenance is None


def test_a_store_without_data_date_answers_no_number(tmp_path: Any) -> None:
    aw = make_analytics_workspace(tmp_path / "ws")
    with sqlite3.connect(aw.root / STORE_FILE) as conn:
        conn.execute("DELETE FROM caricamento")
    conn.close()
    aw.activate()
    answer = ask(aw, "Quanti ricoveri ha avuto la Pediatria nel 2024?")
    data = answer.as_dict()
    assert data["status"] == "failed" and data["error_code"] == "data_date_unreadable"
    assert "analytics.data_date_sql" in answer.text and "no number" in answer.text
    assert "figures" not in data and "provenance" not in data
    assert logged(aw, answer)["error_code"] == "data_date_unreadable"


def test_a_store_that_cannot_be_opened_is_a_failed_answer(
    analytics_ws: AnalyticsWorkspace, caplog: pytest.LogCaptureFixture
) -> None:
    (analytics_ws.root / STORE_FILE).unlink()
    answer = ask(analytics_ws, "Quanti ricoveri ha avuto la Pediatria nel 2024?")
    assert answer.status == "failed"
    assert answer.error_code == "analytics_store_unavailable"
    assert "analytics.files.analytics" in answer.text or "store/analytics.sqlite" in answer.text
    assert any(r.levelname == "ERROR" for r in caplog.records)


def test_only_the_activated_revision_s_catalog_is_served(
    analytics_ws: AnalyticsWorkspace,
) -> None:
    question = "Quanti ricoveri ha avuto la Pediatria nel 2024?"
    # Committed but not activated, and then uncommitted: neither is served.
    analytics_ws.write(
        "analytics/queries/ricoveri-reparto.yaml",
        (analytics_ws.root / "analytics/queries/ricoveri-reparto.yaml")
        .read_text("utf-8")
        .replace("Numero di ricoveri di un singolo reparto", "Conteggio RIVISTO"),
    )
    commit_all(analytics_ws.root, "catalog edit, not activated")
    before = ask(analytics_ws, question)
    assert before.status == "computed" and before.provenance is not None
    assert "Conteggio RIVISTO" not in str(before.diagnostics)
    revision = analytics_ws.activate()
    after = ask(analytics_ws, question)
    assert after.provenance is not None and after.provenance["catalog_revision"] == revision
    assert after.provenance["catalog_revision"] != before.provenance["catalog_revision"]


def test_a_statement_over_the_timeout_is_a_failed_answer(tmp_path: Any) -> None:
    aw = make_analytics_workspace(tmp_path / "ws", extra="statement_timeout_seconds = 0.3\n")
    aw.write(
        "analytics/queries/conta-infinita.yaml",
        """\
id: conta-infinita
description: Conteggio infinito delle stelle del cielo
examples: [Quante stelle ci sono in cielo?]
parameters: {}
measure: count
sql: |
  WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c
result:
  shape: value
  columns:
    n: {label: Stelle, kind: quantity}
""",
    )
    aw.activate()
    answer = ask(aw, "Quante stelle ci sono in cielo?")
    assert answer.status == "failed" and answer.error_code == "statement_timeout"
    assert "analytics.statement_timeout_seconds = 0.3" in answer.text
