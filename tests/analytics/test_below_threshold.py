"""Issue 46, points 3 and 6: a question whose closest catalog query scored below the threshold
says so — the query, its score, the threshold — instead of claiming that no query computes it;
and the "no catalog query computes this" preface appears only when the question asks for a
figure (offline: its measure words), never on a text question."""

from __future__ import annotations

from pathlib import Path

from tests.analytics.conftest import make_analytics_workspace
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
