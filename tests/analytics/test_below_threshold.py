"""Issue 46, points 3 and 6: a question whose closest catalog query scored below the threshold
says so — the query, its score, the threshold — instead of claiming that no query computes it;
and the "no catalog query computes this" preface appears only when the question asks for a
figure (offline: its measure words), never on a text question."""

from __future__ import annotations

from pathlib import Path

from tests.analytics.conftest import STAY, config, make_analytics_workspace
from tests.analytics.test_numeric_answers import ask
from thoth.answer.wording import ITALIAN

COVERED = "Numero dei ricoveri avuti dalla Pediatria nel 2024"


def test_a_covered_question_below_the_threshold_names_its_query_score_and_threshold(
    tmp_path: Path,
) -> None:
    # A threshold above every score: the question's own query is the closest, eligible
    # (no gate refuses it) and below the cut.
    aw = make_analytics_workspace(tmp_path / "ws", threshold=0.999, uncovered=0.2)
    aw.activate()
    aw.publish_text()
    answer = ask(aw, COVERED)
    assert answer.status != "computed" and answer.provenance is None
    decision = answer.diagnostics["analytics"]["decision"]
    fit = next(f for f in decision["fits"] if f["refused"] is None)
    assert fit["query_id"] == "ricoveri-reparto"
    below = answer.diagnostics["analytics"]["below_threshold"]
    assert below == {"query_id": "ricoveri-reparto", "score": fit["score"], "threshold": 0.999}
    assert not answer.text.startswith(ITALIAN.figure_maybe_not_available)
    first = answer.text.split("\n\n", 1)[0]
    assert "ricoveri-reparto" in first and f"{fit['score']:.3f}" in first and "0.999" in first
    assert "nessuna query del catalogo analitico calcola" not in first.casefold()


def test_a_text_question_gets_no_figure_preface(tmp_path: Path) -> None:
    # Every question scores in the "figure not available" band (uncovered -1): a question
    # with no measure word asks no figure, and its answer says nothing of the catalog.
    aw = make_analytics_workspace(tmp_path / "ws", threshold=0.999, uncovered=-1.0)
    aw.activate()
    aw.publish_text()
    text = ask(aw, "Come si organizzano i tempi di attesa in pronto soccorso?")
    assert text.provenance is None
    assert not text.text.startswith(ITALIAN.figure_maybe_not_available), text.text[:200]
    assert not text.text.startswith(ITALIAN.figure_not_available)
    assert "below_threshold" not in text.diagnostics["analytics"]
    figure = ask(aw, "Quanti farmaci sono stati prescritti nei ricoveri del 2024?")
    assert figure.text.startswith(ITALIAN.figure_maybe_not_available)


def test_a_query_refused_above_the_threshold_does_not_hide_the_closest_one_below(
    tmp_path: Path,
) -> None:
    # A query scoring above the threshold that a gate refuses (it measures an average, the
    # question asks a count) says nothing of the query below it that no gate refused: the
    # answer names that one, its score and the threshold, and does not claim that no query
    # computes the question (found on PostgreSQL: "average reading score in Fresno").
    question = "Quanti ricoveri ha registrato in totale la Pediatria nel 2024?"
    aw = make_analytics_workspace(tmp_path / "ws", threshold=0.999, uncovered=0.2)
    aw.write(
        "analytics/queries/degenza-reparto.yaml",
        STAY.replace("id: degenza-media", "id: degenza-reparto").replace(
            "Qual è la degenza media dei ricoveri nel 2024?",
            question.replace("la Pediatria", "il reparto"),
        ),
    )
    aw.activate()
    aw.publish_text()
    fits = ask(aw, question).diagnostics["analytics"]["decision"]["fits"]
    refused, eligible = fits[0], next(f for f in fits if f["refused"] is None)
    assert refused["refused"] is not None and refused["score"] > eligible["score"]
    threshold = round((refused["score"] + eligible["score"]) / 2, 5)
    aw.write("thoth.toml", config(threshold, 0.2, ""))
    answer = ask(aw, question)
    assert answer.provenance is None
    below = answer.diagnostics["analytics"]["below_threshold"]
    assert below == {
        "query_id": eligible["query_id"],
        "score": eligible["score"],
        "threshold": threshold,
    }
    first = answer.text.split("\n\n", 1)[0]
    assert eligible["query_id"] in first and f"{threshold:.3f}" in first
    assert "nessuna query del catalogo analitico calcola" not in first.casefold()
