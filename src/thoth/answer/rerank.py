"""The second stage of ranking: after fusion, the top candidates are ordered again by how much
of what the question asks they hold, the names of the question's scope and its periods set
aside.

Why a second stage: both branches score the whole question. Once a question is scoped to one
company's filing (thoth.entities), the company's name and the form's ("Microsoft", "10-Q",
"Q3 2023") say nothing about which fragment answers, yet they are what the cover page, the
exhibits and the signatures hold: measured on five 10-Q filings, the income statement row
"Gross margin | 40,215" came 15th behind them. Here a question term weighs by its rarity
among the candidates (a word every candidate holds ranks nothing), a fragment's term score is
the weight of the question's terms its searched text holds (title, headings, table headers
and rows), and a fragment with a figure (a currency sign, a percentage, a thousands separator)
counts its terms double, for a 10-Q question asks a figure far more often than prose. A line
whose figures follow a label made of asked words alone ("Gross margin 40,215 34,670", a
statement row as the branches read it) names the asked measure: its label's terms count once
more, for prose that repeats "gross margin" around other figures holds the same terms, and
the row with the figure came 6th behind it. That order is fused with the first one by
reciprocal rank, so a fragment both stages like leads, and one only the terms like cannot
jump from the bottom to the top.

It runs only inside an entity scope (the answer engine's rule, thoth.answer.retrieval):
without one, BM25 already weighs every word of the question, and measured on TAT-QA the second
stage lowered hit@1. It steps aside when the question's terms barely meet the candidates (fewer
than half of them occur in any: an Italian question over English filings, a paraphrase), for
then it would reorder on chance matches. Pure: the same question and candidates give the same
order.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from thoth.folding import fold
from thoth.glossary import GLOSSARY_WEIGHT
from thoth.index.base import Hit
from thoth.index.bm25 import Bm25Encoder

# Reciprocal-rank constant of the fusion of the two orders: small, so the top of each counts.
RERANK_K = 5
# A fragment with a figure counts its terms double (measured: 1.5 to 3 give the same order).
FIGURE_WEIGHT = 2.0
# Below this share of the question's terms found in any candidate, the order is kept.
MIN_TERMS_MET = 0.5

_WORD = re.compile(r"\w+")
# Tokens with a digit are periods, form names and numbers ("Q3", "2023", "10-Q"): the period
# check and the entity scope deal with them, and every page of a filing holds them.
_WITH_DIGIT = re.compile(r"\S*\d\S*")
# A figure as filings write them: a currency sign, a percentage, a thousands separator.
_FIGURE = re.compile(r"[$€£]\s?\(?\d|\d\s?%|\d{1,3}(?:[.,]\d{3})+")
# A line's label and its first number: "Gross margin 40,215 34,670 16%", "Revenue $56,517",
# "Interest income: 187" (a spelled-out table row), "Net loss (1,234)".
# On one line: a title line above a paragraph that opens with a year is no row label.
_LABELLED = re.compile(
    r"^[ \t•·*\-]*(?P<label>[^\W\d][^\d$€£(\n]*?)[ \t:|]*[$€£(]?[ \t]?\d", re.MULTILINE
)

Stems = Callable[[str], frozenset[int | str]]


def term_function(language: str) -> Stems:
    """Accent- and case-insensitive terms: BM25's own stems and stopwords for the language
    (so "ricoveri" meets "ricovero"), plain folded words for a language it has no stemmer for.
    Memoised: the same candidates and sentences come back question after question, and
    folding and stemming them is most of the second stage's time."""
    try:
        encoder = Bm25Encoder(language, 1.0)
    except ValueError:
        encoder = None

    @lru_cache(maxsize=8192)
    def stems(text: str) -> frozenset[int | str]:
        if encoder is None:
            return frozenset(w for w in _WORD.findall(fold(text)) if len(w) > 2)
        return frozenset(encoder.query(fold(text)).indices)

    return stems


def named_rows_weight(
    text: str, stems: Stems, asked: frozenset[int | str], weight: dict[int | str, float]
) -> float:
    """The weight of the best line of `text` whose label, before its first number, is made of
    asked terms alone (`asked`: the question's terms the text holds): a row naming the asked
    measure. 0 when no label is: a word the question did not ask ("Gross margin increased")
    makes the line a sentence about the figure, not the figure's row."""
    best = 0.0
    for m in _LABELLED.finditer(text):
        label = stems(m.group("label"))
        if label and label <= asked:
            best = max(best, sum(weight.get(t, 0.0) for t in label))
    return best


@dataclass(frozen=True)
class Candidate:
    """One fused candidate as the second stage reads it."""

    hit: Hit
    text: str  # what was searched: title, headings, text (tables as rows)
    language: str  # the language its BM25 terms were made in


@dataclass(frozen=True)
class Reranked:
    hits: list[Hit]
    applied: bool
    terms_met: float  # share of the question's terms some candidate holds
    first_stage: dict[str, int]  # hit id -> its rank after fusion (1-based)

    @property
    def reason(self) -> str:
        return "applied" if self.applied else "few_terms_met"


def rerank(
    question: str,
    candidates: Sequence[Candidate],
    stems_for: Callable[[str], Stems],
    asked_in: Callable[[str], str] | None = None,
    named_in: Callable[[str], str] | None = None,
) -> Reranked:
    """`candidates` in their fused order, reordered (see the module). `question` is the text
    to match: the caller removes the names of the question's scope first. `asked_in(language)`
    gives what to match against candidates of that language instead (the workspace glossary's
    terms of that language for an Italian question over English filings: thoth.glossary).
    `named_in(language)`: the glossary's terms in that language the question uses or the
    glossary adds, which weigh `GLOSSARY_WEIGHT` times more: a long question's framing words
    ("how do the reported shifts correspond with the strategies outlined") are what prose
    echoes, while the reviewed vocabulary names what the documents report ("inventory")."""
    first_stage = {c.hit.id: rank for rank, c in enumerate(candidates, start=1)}

    def asked_text(language: str) -> str:
        return _WITH_DIGIT.sub(" ", asked_in(language) if asked_in else question)

    # A candidate is matched in the language its terms were made in, the question likewise:
    # a term is a (language, stem) pair, for stems of two languages never meet.
    asked = {lang: stems_for(lang)(asked_text(lang)) for lang in {c.language for c in candidates}}
    held = [stems_for(c.language)(c.text) & asked[c.language] for c in candidates]
    kept = [c.hit for c in candidates]
    met = {(c.language, t) for c, h in zip(candidates, held, strict=True) for t in h}
    asked_all = sum(len(terms) for terms in asked.values())
    share = len(met) / asked_all if asked_all else 0.0
    if not candidates or share < MIN_TERMS_MET:
        return Reranked(kept, False, round(share, 3), first_stage)
    spread = Counter((c.language, t) for c, h in zip(candidates, held, strict=True) for t in h)
    # A term's weight by its rarity among the candidates, per language (stems never cross).
    weight: dict[str, dict[int | str, float]] = {}
    named = {lang: stems_for(lang)(named_in(lang)) if named_in else frozenset() for lang in asked}
    for (lang, t), n in spread.items():
        boost = GLOSSARY_WEIGHT if t in named[lang] else 1.0
        weight.setdefault(lang, {})[t] = boost * math.log(1 + len(candidates) / n)
    scores = [
        (
            sum(weight[c.language][t] for t in h)
            + named_rows_weight(c.text, stems_for(c.language), h, weight.get(c.language, {}))
        )
        * (FIGURE_WEIGHT if _FIGURE.search(c.text) else 1.0)
        for c, h in zip(candidates, held, strict=True)
    ]
    by_terms = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], i))
    term_rank = {i: rank for rank, i in enumerate(by_terms, start=1)}
    fused = {
        i: 1 / (RERANK_K + i + 1) + (1 / (RERANK_K + term_rank[i]) if i in term_rank else 0.0)
        for i in range(len(candidates))
    }
    order = sorted(fused, key=lambda i: (-fused[i], i))
    return Reranked([kept[i] for i in order], True, round(share, 3), first_stage)
