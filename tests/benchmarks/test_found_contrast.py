"""benchmarks/found_contrast.py: the passage-contrast test of an unmatched word (does the quoted
passage's similarity fall or rise when the word leaves the question?) and what a rule built on it
would change, counted per set: unanswerable questions it would refuse (gained) and answerable
ones it would lose. Pure functions on measured rows; no workspace."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import found_contrast


def test_a_passage_carrying_the_word_falls_when_the_word_leaves() -> None:
    passage = np.array([1.0, 0.0])
    whole = np.array([0.8, 0.6])  # the question, closer to the passage with the word
    rest = np.array([0.6, 0.8])  # without the word: farther from the passage
    assert found_contrast.contrast(passage, whole, rest) > 0  # the passage carries it
    assert found_contrast.contrast(passage, rest, whole) < 0  # the reverse: it lacks it


def test_centred_contrast_removes_what_every_passage_shares() -> None:
    passage = np.array([1.0, 0.0])
    whole = np.array([0.8, 0.6])
    rest = np.array([0.6, 0.8])
    centroid = np.array([1.0, 0.0])  # every passage like this one: nothing tells it apart
    assert found_contrast.contrast(passage, whole, rest, centroid) == 0.0


def test_the_question_itself_follows_a_word_at_the_rate_of_one() -> None:
    """The follow rate is the contrast over the question's own move without the word: a passage
    that is the question follows every word at 1 (the control the held words would give)."""
    whole = np.array([0.8, 0.6])
    rest = np.array([0.6, 0.8])
    rate = found_contrast.follow_rate(whole, whole, rest)
    assert rate is not None and abs(rate - 1.0) < 1e-12
    assert found_contrast.follow_rate(whole, whole, whole) is None  # no move: no rate


def row(kind: str, status: str, words: list[tuple[float, float]]) -> dict[str, object]:
    return {
        "set": "s",
        "kind": kind,
        "status": status,
        "words": [{"word": f"w{i}", "share": s, "rank1": c} for i, (s, c) in enumerate(words)],
    }


def test_the_rule_refuses_found_questions_with_a_lacking_word_over_the_floor() -> None:
    rows = [
        row("unanswerable", "found", [(0.21, -0.002)]),  # lacking, over the floor: gained
        row("unanswerable", "found", [(0.21, +0.002)]),  # paraphrased: kept
        row("unanswerable", "found", [(0.05, -0.010)]),  # lacking, under the floor: kept
        row("answerable", "found", [(0.20, -0.001)]),  # lacking by the test: lost
        row("answerable", "found", [(0.20, +0.004)]),  # paraphrased: kept
        row("answerable", "nothing_found", [(0.30, -0.004)]),  # refused already: not counted
        row("unanswerable", "nothing_found", [(0.30, -0.004)]),  # refused already: not counted
    ]
    assert found_contrast.rule_effect(rows, "rank1", 0.15) == {"s": {"gained": 1, "lost": 1}}


def test_sentences_are_split_after_their_stop_and_short_pieces_left_out() -> None:
    texts = ["Il codice azzurro va visitato entro 60 minuti. Nota: vedi sotto.\n| 60 |", ""]
    assert found_contrast.sentences(texts) == [
        "Il codice azzurro va visitato entro 60 minuti.",
        "Nota: vedi sotto.",
    ]
