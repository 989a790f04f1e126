"""Issue 46, point 3: a threshold that holds for questions the calibration set did not
contain. When the gates refuse every uncovered question, the cut comes from the covered
questions' spread (a prediction bound), never the lowest covered score shown; the calibration
says what share of new wordings it expects computed (leave-one-out); a set that cannot say it
is refused or warned about, never a silently useless threshold. The same for channel routing
and the found floor."""

from __future__ import annotations

import math

import pytest

from tests.analytics.test_decision import HEROES, decided
from tests.answer.test_routing import LABELLED
from tests.knowledge_index import CHANNELS, StemEmbedder
from thoth.analytics.decide import Decision
from thoth.analytics.routing import QueryCalibration, calibrate
from thoth.answer.calibration import Observed, calibrate_found
from thoth.answer.routing import ChannelRouter, prediction_floor
from thoth.answer.routing import calibrate as calibrate_channels
from thoth.errors import ThothError

# Covered wordings of two queries, with their similarity; the uncovered one names a colour
# the catalog does not know, so the unknown-words gate refuses it whatever its similarity.
COVERED = {
    "How many heroes have brown eyes?": ("heroes-by-eyes", 0.97),
    "Number of heroes with green eyes": ("heroes-by-eyes", 0.93),
    "Count the heroes whose eyes are brown": ("heroes-by-eyes", 0.95),
    "Average height of the heroes": ("average-height", 0.96),
    "What is the average height of a hero?": ("average-height", 0.94),
}
UNCOVERED = "How many heroes have blue eyes?"


def _calibrate(covered: dict[str, tuple[str, float]]) -> QueryCalibration:
    def decide_one(question: str) -> Decision:
        scores = {qid: 0.1 for qid in HEROES}
        if question in covered:
            qid, sim = covered[question]
            scores[qid] = sim
        else:
            scores["heroes-by-eyes"] = 0.99  # closer than any covered one: only a gate stops it
        return decided(question, scores, threshold=-math.inf, tie_margin=0.0)

    labelled = [(q, qid, False) for q, (qid, _) in covered.items()]
    return calibrate([*labelled, (UNCOVERED, None, True)], HEROES, decide_one)


def test_with_every_uncovered_question_gated_the_cut_holds_for_new_wordings() -> None:
    result = _calibrate(COVERED)
    lowest = min(result.covered)
    assert result.not_covered == []  # the gates refused the one uncovered question
    # Not 0.001 under the lowest covered score: a prediction bound from their spread.
    assert result.threshold == pytest.approx(prediction_floor(result.covered))
    assert result.threshold < lowest - 0.01
    # A new wording scoring a little below the lowest one shown is still computed.
    assert (
        decided(
            "How many heroes have green eyes?",
            {"heroes-by-eyes": lowest - 0.01},
            threshold=result.threshold,
        ).outcome
        == "compute"
    )
    # The gate still refuses the uncovered question at that threshold: no wrong number.
    assert decided(UNCOVERED, {"heroes-by-eyes": 0.99}, threshold=result.threshold).outcome == (
        "text"
    )
    data = result.as_dict()
    estimate = data["expected_computed"]
    assert estimate["method"] == "leave-one-out" and estimate["of"] == 5
    assert estimate["accepted"] >= 4  # the lowest left out may fall under the others' bound
    assert data["expected_wrong_numbers"]["accepted"] == 0
    assert any("refused by the gates" in w for w in data["warnings"])


def test_one_question_per_query_is_a_clear_warning() -> None:
    one_each = {
        "How many heroes have brown eyes?": ("heroes-by-eyes", 0.97),
        "Average height of the heroes": ("average-height", 0.96),
        "Number of heroes of each publisher": ("heroes-per-publisher", 0.95),
    }
    result = _calibrate(one_each)
    assert any("one covered question per query" in w for w in result.warnings)
    assert result.expected_computed.of == 3


def test_too_few_covered_questions_are_refused_with_what_to_add() -> None:
    two = dict(list(COVERED.items())[:2])
    with pytest.raises(ThothError, match="at least 3 covered questions"):
        _calibrate(two)


def test_only_covered_questions_are_refused() -> None:
    def decide_one(question: str) -> Decision:
        qid, sim = COVERED[question]
        return decided(question, {q: 0.1 for q in HEROES} | {qid: sim}, threshold=-math.inf)

    with pytest.raises(ThothError, match="no query covers"):
        calibrate([(q, qid, False) for q, (qid, _) in COVERED.items()], HEROES, decide_one)


def test_a_covered_question_the_gates_refuse_counts_against_the_estimate() -> None:
    result = _calibrate(
        COVERED | {"How tall are heroes with blue eyes on average?": ("average-height", 0.9)}
    )
    assert result.expected_computed.of == 6 and result.expected_computed.accepted <= 5


def test_the_found_floor_without_negatives_comes_from_the_spread() -> None:
    observed = [
        Observed("a1", True, 0.86, ()),
        Observed("a2", True, 0.80, ()),
        Observed("a3", True, 0.83, ()),
        Observed("a5", True, 0.85, ()),
        Observed("a4", True, 0.84, ("Q3",)),  # refused by the term check: never found
        Observed("u1", False, 0.90, ("Tesla",)),  # every unanswerable one refused by terms
    ]
    result = calibrate_found(observed, None)
    assert result.threshold < 0.80 - 0.01  # below the old "lowest minus 0.01"
    assert result.as_dict()["expected_found"] == {
        "method": "leave-one-out",
        "accepted": 4,
        "of": 5,
        "share": 0.8,
    }
    with pytest.raises(ThothError, match="too few"):
        calibrate_found(observed[:2] + observed[5:], None)


def test_channel_calibration_reports_the_expected_share_of_new_questions_routed() -> None:
    result = calibrate_channels(ChannelRouter(CHANNELS, StemEmbedder(), threshold=0.0), LABELLED)
    estimate = result.as_dict()["expected_routed"]
    assert estimate["method"] == "leave-one-out" and estimate["of"] == 5
    assert 0 <= estimate["accepted"] <= 5


def test_a_lowest_covered_score_under_the_bound_keeps_the_cut_just_under_it() -> None:
    # Tight scores and one low outlier: the cut keeps the outlier and goes no lower (a margin
    # under it computed a wrong number on the demo's catalog: 0 wrong numbers comes first).
    scores = [0.97, 0.96, 0.965, 0.955, 0.96, 0.968, 0.962, 0.958, 0.966, 0.93]
    assert prediction_floor(scores) == pytest.approx(0.93 - 0.001)
    tight = [0.97, 0.96, 0.965, 0.955, 0.96, 0.968, 0.95]
    assert prediction_floor(tight) < min(tight) - 0.005  # a spread bound, not the lowest shown
