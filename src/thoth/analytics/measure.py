"""What a question asks to be measured, and whether a catalog query measures it.

Similarity alone cannot tell "how many" from "what share of": a count from a neighbouring
query, with its data date and reviewed SQL, is the most convincing wrong answer there is. So
each catalog query declares its measure(s) (`measure:` in its file, checked against its
result columns by `tht analytics check`), the question's measure words are read here (Italian
and English), and a query is chosen only when they agree. A question without measure words
constrains nothing (routing by similarity decides); a question whose words name a measure the
query does not compute is never answered with that query's number.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, Literal, get_args

Measure = Literal[
    "count", "share", "average", "sum", "minimum", "maximum", "ratio", "list", "trend"
]
MEASURES: Final[frozenset[str]] = frozenset(get_args(Measure))

# Words that name a measure, by measure. Matched on the lower-cased question, as whole words
# (a prefix with `\w*` where Italian inflects). "totale" asks a sum or a count ("il numero
# totale di ricoveri"); "tasso" and "rate" a share or a ratio.
_WORDS: Final[tuple[tuple[tuple[Measure, ...], str], ...]] = (
    (("count",), r"quant[ie]|numero|conta\w*|conteggio|how many|number of|count"),
    (
        ("share",),
        r"percentual\w*|per ?cento|quota|proporzion\w*|frazione|percentage|percent|"
        r"proportion|share|fraction|what part|%",
    ),
    (("share", "ratio"), r"tass[oi]|rate"),
    (("average",), r"medi[aoe]|mediamente|average|mean|avg"),
    (("sum", "count"), r"total[ei]|somma|complessiv\w*|in tutto|total|sum|overall"),
    (
        ("minimum",),
        r"minim[oaie]|pi[uù] bass[oa]|pi[uù] brev[ei]|meno|minimum|lowest|smallest|least|"
        r"shortest|fewest",
    ),
    (
        ("maximum",),
        r"massim[oaie]|pi[uù] alt[oa]|pi[uù] lung[oa]|maggior[ei]|di pi[uù]|pi[uù]|maximum|"
        r"highest|largest|longest|most|biggest|peak",
    ),
    (("ratio",), r"rapporto|per mille|ogni \d+|ratio|per capita|per \d+"),
    (("list",), r"elenc\w*|lista|list|show me the|mostra\w*|show"),
    (
        ("trend",),
        r"andamento|trend|nel tempo|mese per mese|mensil\w*|over time|monthly|month by month",
    ),
)
_TOTAL: Final = ("sum", "count")
_PATTERNS: Final = tuple(
    (measures, re.compile(rf"(?<![\w%])(?:{words})(?![\w])", re.IGNORECASE))
    for measures, words in _WORDS
)


def asked_measures(question: str) -> frozenset[str]:
    """Every measure the question's words name (empty: it names none). "Total" beside another
    measure word is an adjective ("the average total price"), not a sum."""
    named = [measures for measures, pattern in _PATTERNS if pattern.search(question)]
    if len(named) > 1 and _TOTAL in named:
        named.remove(_TOTAL)
    return frozenset(m for measures in named for m in measures)


def without_measure_words(question: str) -> str:
    """The question with its measure words blanked (what is left says *what* is measured)."""
    for _, pattern in _PATTERNS:
        question = pattern.sub(" ", question)
    return question


def agrees(asked: Iterable[str], declared: Iterable[str]) -> bool:
    """Whether a query declaring `declared` answers a question asking `asked`: the question
    names no measure, or one the query computes. A query that declares none cannot be
    checked and is taken as before (`tht analytics check` asks for the declaration)."""
    asked_set, declared_set = set(asked), set(declared)
    return not asked_set or not declared_set or bool(asked_set & declared_set)
