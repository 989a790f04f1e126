"""Calibrating `found` on labelled questions: where the relevance floor belongs once the term
check has had its say, and what both errors cost.

Each question is searched once with both signals (thoth.answer.relevance) and judged again at
any floor without searching: it is `found` when no distinctive term is missing and its closest
fragment's similarity reaches the floor. Two error rates, never folded into one accuracy: a
false `nothing_found` (an answerable question refused) and a false `found` (an unanswerable
question answered with unrelated text).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from thoth.answer.routing import (
    MIN_POSITIVES,
    Estimate,
    distribution,
    leave_one_out,
    prediction_floor,
    split_threshold,
)
from thoth.errors import ThothError


@dataclass(frozen=True)
class Observed:
    question: str
    answerable: bool
    similarity: float | None  # closest fragment's dense similarity (None: no dense branch)
    missing: tuple[str, ...]  # distinctive terms the corpus or the retrieved documents lack

    def found_at(self, floor: float | None) -> bool:
        if self.missing:
            return False
        return floor is None or self.similarity is None or self.similarity >= floor


@dataclass(frozen=True)
class Rates:
    false_nothing_found: tuple[int, int]  # answerable questions refused, of answerable
    false_found: tuple[int, int]  # unanswerable questions answered, of unanswerable

    def as_dict(self) -> dict[str, Any]:
        def rate(pair: tuple[int, int]) -> dict[str, Any]:
            part, whole = pair
            return {"count": part, "of": whole, "rate": round(part / whole, 4) if whole else None}

        return {
            "false_nothing_found": rate(self.false_nothing_found),
            "false_found": rate(self.false_found),
        }


@dataclass(frozen=True)
class FoundCalibration:
    observed: tuple[Observed, ...]
    configured: float | None  # the floor in effect now
    threshold: float  # the suggested floor
    separated: bool  # answerable above every unanswerable question the term check lets by
    # Leave-one-out: the share of new answerable questions that would be `found`.
    expected_found: Estimate | None = None

    def rates(self, floor: float | None) -> Rates:
        answerable = [o for o in self.observed if o.answerable]
        other = [o for o in self.observed if not o.answerable]
        return Rates(
            (sum(not o.found_at(floor) for o in answerable), len(answerable)),
            (sum(o.found_at(floor) for o in other), len(other)),
        )

    @property
    def at_configured(self) -> Rates:
        return self.rates(self.configured)

    @property
    def at_suggested(self) -> Rates:
        return self.rates(self.threshold)

    def wrong(self, floor: float | None) -> list[str]:
        """One readable line per question judged wrongly at `floor`."""
        lines = []
        for o in self.observed:
            if o.found_at(floor) == o.answerable:
                continue
            sim = "-" if o.similarity is None else f"{o.similarity:.3f}"
            why = f"missing {', '.join(o.missing)}" if o.missing else f"similarity {sim}"
            what = "false nothing_found" if o.answerable else "false found"
            lines.append(f"{what}: {o.question!r} ({why})")
        return lines

    def as_dict(self) -> dict[str, Any]:
        sims = [(o.answerable, o.similarity) for o in self.observed if o.similarity is not None]
        return {
            "in_domain": distribution([s for a, s in sims if a]),
            "out_of_domain": distribution([s for a, s in sims if not a]),
            "threshold": round(self.threshold, 4),
            "separated": self.separated,
            "expected_found": None
            if self.expected_found is None
            else self.expected_found.as_dict(),
            "configured": self.configured,
            "at_configured": self.at_configured.as_dict(),
            "at_suggested": self.at_suggested.as_dict(),
            "per_question": [
                {
                    "question": o.question,
                    "answerable": o.answerable,
                    "similarity": None if o.similarity is None else round(o.similarity, 4),
                    "missing": list(o.missing),
                    "found_at_configured": o.found_at(self.configured),
                    "found_at_suggested": o.found_at(self.threshold),
                }
                for o in self.observed
            ],
        }


def calibrate_found(observed: Sequence[Observed], configured: float | None) -> FoundCalibration:
    """The suggested floor separates the answerable questions from the unanswerable ones the
    term check lets through (the others are refused whatever the floor): the middle of the
    gap, or the best accuracy, lowest among equals. With none to separate, just below the
    lowest answerable similarity."""
    answerable = [o.similarity for o in observed if o.answerable and o.similarity is not None]
    through = [
        o.similarity
        for o in observed
        if not o.answerable and not o.missing and o.similarity is not None
    ]
    if not answerable:
        raise ThothError(
            "calibrating found needs answerable questions with a dense similarity: add "
            "in-domain questions (with a channel) and check that the embedder answers"
        )

    def cut(positives: Sequence[float]) -> float:
        if through:
            return split_threshold(positives, through).threshold
        # Nothing unanswerable gets past the term check: the floor is where a new answerable
        # question still lands (their spread), never the lowest one shown.
        return round(prediction_floor(positives), 4)

    if not through and len(answerable) < MIN_POSITIVES:
        raise ThothError(
            f"calibrating found: no unanswerable question gets past the term check, and "
            f"{len(answerable)} answerable question(s) with a similarity are too few to say "
            f"where a new one lands (at least {MIN_POSITIVES}) -> add answerable questions, or "
            "unanswerable ones that share the corpus's words"
        )
    threshold = cut(answerable)
    separated = not through or min(answerable) > max(through)
    estimate = leave_one_out(
        [
            None if o.missing else o.similarity
            for o in observed
            if o.answerable and (o.missing or o.similarity is not None)
        ],
        cut,
    )
    return FoundCalibration(tuple(observed), configured, threshold, separated, estimate)
