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
    # "quante volte", "how many times": the phrase is the count word (of the rows the rest of
    # the question names), not a count of "times"
    (
        ("count",),
        r"quante\s+volte|how\s+many\s+times|quant[ie]|numero|conta\w*|conteggio|how many|"
        r"number of|count",
    ),
    # "how much" asks an amount: a sum, unless another measure word says which ("quanto" is
    # wider in Italian: "quanto sono occupati i letti" asks a share, "quanto dura" a time)
    (("sum",), r"how much"),
    (
        ("share",),
        r"percentual\w*|per ?cento|su\s+(?:cento|100)|quota|proporzion\w*|frazione|"
        r"out\s+of\s+(?:a\s+|every\s+|one\s+)?(?:hundred|100)|percentage|percent|"
        r"proportion|share|fraction|what part|%",
    ),
    (("share", "ratio"), r"tass[oi]|rate"),
    (("average",), r"medi[aoe]?|mediamente|average|mean|avg"),
    (("sum", "count"), r"total[ei]|somma|complessiv\w*|in tutto|total|sum|overall"),
    (
        ("minimum",),
        r"minim[oaie]|pi[uù] bass[oa]|pi[uù] brev[ei]|di meno|meno(?! di\b)|minimum|lowest|"
        r"smallest|least|"
        r"shortest|fewest",
    ),
    (
        ("maximum",),
        # "più di 30" and "meno di 30" compare; "di più", "più pazienti" rank
        r"massim[oaie]|pi[uù] alt[oa]|pi[uù] lung[oa]|maggior[ei]|di pi[uù]|"
        r"pi[uù](?! di\b| del\w*\b| dei\b| che\b| bass| brev)|maximum|"
        r"highest|largest|longest|most|biggest|peak|picco",
    ),
    (("ratio",), r"rapporto|per mille|ogni \d+|ratio|per capita|per \d+"),
    (("list",), r"elenc\w*|lista|list"),
    (
        ("trend",),
        r"andamento|trend|nel tempo|mese per mese|over time|month by month",
    ),
)
# Measures Thoth knows but a catalog cannot declare (not in `Measure`): a question naming one
# ("la mediana dell'attesa", "how many distinct drugs") asks something no query computes, and
# the nearest query's average or count would be the wrong number.
_BEYOND: Final[tuple[tuple[tuple[str, ...], str], ...]] = (
    (("median",), r"median[aeio]?|medians?"),
    (("percentile",), r"percentil[ei]|percentiles?|quartil[ei]|quartiles?"),
    (("distinct",), r"distint[aeio]|distinct|univoc\w*|unique"),
    (("variance",), r"varianz[ae]|variances?|deviazion[ei]|deviations?|scarto quadratico"),
    # a change between periods is one number, not the values over time (`trend`)
    (
        ("change",),
        r"cresci\w*|cresciut\w*|crescit[ae]|aumentat\w*|aument[oi]|diminuit\w*|diminuzion[ei]|"
        r"calat[aeio]|calo|salit[aeio]|sces[aeio]|variazion[ei]|increased?|increases|decreased?|"
        r"decreases|grew|grown|growth|rose|risen|fell|fallen|drop(?:ped)?",
    ),
)
# A request to show ("mostrami", "show me", "fammi vedere") asks a list only when it names no
# other measure: "mostrami la degenza media" asks the average.
_SHOW: Final = re.compile(
    r"(?<![\w%])(?:show\s+me\s+the|show|mostra\w*|fammi\s+vedere)(?![\w])", re.IGNORECASE
)
_TOTAL: Final = ("sum", "count")
_COUNT: Final = ("count",)
_HOW_MUCH: Final = ("sum",)
_PATTERNS: Final[tuple[tuple[tuple[str, ...], re.Pattern[str]], ...]] = tuple(
    (measures, re.compile(rf"(?<![\w%])(?:{words})(?![\w])", re.IGNORECASE))
    for measures, words in (*_WORDS, *_BEYOND)
)
# Words for money in both languages: a figure of kind `amount` is money (docs/database.md), so
# "quanti soldi" / "how much money" asks it, in whatever currency its unit names.
MONEY_WORDS: Final = ("soldi", "denaro", "money")
# Every pattern of a measure word, the request to show included (what is measured follows it).
_SPOKEN: Final = (*(pattern for _, pattern in _PATTERNS), _SHOW)
# "Quanti euro", "how many minutes": a count word before the unit of the figure asks that
# figure in that unit, not a count of something.
_COUNT_WORD: Final = r"quant[ie]|how\s+many"


def _unit_words(units: Iterable[str]) -> str | None:
    """A pattern for the words of the units (a plural or another last vowel for words of 4+
    letters: giorni/giorno, minutes/minute)."""
    forms = []
    for unit in units:
        for word in re.findall(r"[^\W\d_]{2,}", unit.casefold()):
            forms.append(re.escape(word[:-1]) + r"\w{0,2}" if len(word) >= 4 else re.escape(word))
    return "|".join(sorted(set(forms))) or None


def measure_groups(question: str, units: Iterable[str] = ()) -> tuple[frozenset[str], ...]:
    """The measures the question names, one group per measure word ("tasso": share or ratio).
    "Total" beside another measure word is an adjective ("the average total price"); "how
    many" names the unit ("quanti giorni in media", "how many percent"); "how much" asks a sum
    unless another measure word says which ("how much on average"). `units`: the units of a
    query's figures ("euro"): "quanti euro" then names the unit, and counts nothing."""
    unit = _unit_words(units)
    if unit is not None:
        question = re.sub(
            rf"\b(?:{_COUNT_WORD})\s+(?=(?:{unit})\b)", " ", question, flags=re.IGNORECASE
        )
    named = [measures for measures, pattern in _PATTERNS if pattern.search(question)]
    if not named and _SHOW.search(question):
        named.append(("list",))
    weak: tuple[str, ...]
    for weak in (_TOTAL, _COUNT, _HOW_MUCH):
        if len(named) > 1 and weak in named:
            named.remove(weak)
    return tuple(frozenset(measures) for measures in named)


def measure_spans(question: str) -> list[tuple[int, int]]:
    """Where the question's measure words are (start, end), in order."""
    return sorted(m.span() for pattern in _SPOKEN for m in pattern.finditer(question))


def without_measure_words(question: str) -> str:
    """The question with its measure words blanked (what is left says *what* is measured)."""
    for pattern in _SPOKEN:
        question = pattern.sub(" ", question)
    return question


def agrees(groups: Iterable[Iterable[str]], declared: Iterable[str]) -> bool:
    """Whether a query declaring `declared` answers a question naming `groups`
    (measure_groups): every measure word names one the query computes ("how many and what
    share" is two questions: a count query answers half of it). A question naming none
    constrains nothing; a query that declares none cannot be checked and is taken as before
    (`tht analytics check` asks for the declaration)."""
    declared_set = set(declared)
    return not declared_set or all(set(group) & declared_set for group in groups)
