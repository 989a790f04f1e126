"""Deterministic parameter extraction (offline routing), and the one validation of parameter
values whoever proposed them (the offline extractor or the model's function call).

From the question: enumeration values and their synonyms (the catalog's own, and those of
Evidence glossary units whose term is a value), matched on stems so "ricoveri ordinari" finds
`ordinario`; dates (ISO, yyyy/m/d, d/m/yyyy, "3 marzo 2024"); years, also relative ("l'anno
scorso", "last year"); months by name and quarters ("Q3", "terzo trimestre", "third quarter");
other numbers; a quoted text. Then the defaults. What stays missing and is required is named
(`needs_parameter`); a value that is not allowed (outside min/max, not one of the
enumeration's values) is named too, never guessed or clamped."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Final

from text_to_num import alpha2digit

from thoth.analytics.catalog import CatalogQuery, Parameter, check_range, coerce
from thoth.folding import fold
from thoth.index.bm25 import Bm25Encoder

_MONTHS: Final = {
    name: number
    for number, names in enumerate(
        [
            ("gennaio", "january"),
            ("febbraio", "february"),
            ("marzo", "march"),
            ("aprile", "april"),
            ("maggio", "may"),
            ("giugno", "june"),
            ("luglio", "july"),
            ("agosto", "august"),
            ("settembre", "september"),
            ("ottobre", "october"),
            ("novembre", "november"),
            ("dicembre", "december"),
        ],
        start=1,
    )
    for name in names
}
# Month names outside a full date, Italian and English ("May" only capitalised: "may" is a verb).
_MONTH_NAME: Final = re.compile(
    r"\b(" + "|".join(n for n in _MONTHS if n != "may") + r")\b", re.IGNORECASE
)
_MAY: Final = re.compile(r"\bMay\b")
_ORDINALS: Final = {
    "primo": 1,
    "secondo": 2,
    "terzo": 3,
    "quarto": 4,
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
}
# "Q3", "3° trimestre", "terzo trimestre", "trimestre 3", "third quarter", "3rd quarter".
_QUARTER: Final = re.compile(
    r"\bq([1-4])\b|\b([1-4])\s*[°ºo]?\s+trimestre\b|\btrimestre\s+([1-4])\b|"
    r"\b(primo|secondo|terzo|quarto)\s+trimestre\b|"
    r"\b(first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter\b",
    re.IGNORECASE,
)
_ISO_DATE: Final = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DMY_DATE: Final = re.compile(r"\b(\d{1,2})[/.](\d{1,2})[/.](\d{4})\b")
_YMD_DATE: Final = re.compile(r"\b(\d{4})/(\d{1,2})/(\d{1,2})\b")
_WORD_DATE: Final = re.compile(
    r"\b(\d{1,2})\s+(" + "|".join(_MONTHS) + r")\s+(\d{4})\b", re.IGNORECASE
)
# Years said relative to today: (pattern, offset). "L'anno scorso" asked on 2025-03-01 is 2024.
_RELATIVE_YEARS: Final = (
    (
        re.compile(
            r"\b(?:l'|lo\s+)?anno\s+(?:scorso|passato|precedente)\b|\b(?:last|previous)\s+year\b",
            re.IGNORECASE,
        ),
        -1,
    ),
    (
        re.compile(
            r"\bquest'anno\b|\banno\s+(?:corrente|in\s+corso)\b|\b(?:this|current)\s+year\b",
            re.IGNORECASE,
        ),
        0,
    ),
    (re.compile(r"\bdue\s+anni\s+fa\b|\btwo\s+years\s+ago\b", re.IGNORECASE), -2),
)
_YEAR: Final = re.compile(r"(?<![\d.,/-])((?:19|20)\d{2})(?![\d.,/-]\d)")
# "Su 100", "per 100", "out of 100": the base of a share, which the measure reads, no value.
_PER_HUNDRED: Final = re.compile(r"\b(?:su|per|out\s+of(?:\s+(?:a|every|one))?|every)\s+100\b")
_NUMBER: Final = re.compile(r"(?<![\w.,])(\d+(?:[.,]\d+)?)(?![\w]|[.,]\d)")
_QUOTED: Final = re.compile(r"[«\"“]([^»\"”]+)[»\"”]")


@dataclass
class Extraction:
    """Parameter values for one query: bound (typed) values, where each came from, and what
    is missing or not allowed."""

    values: dict[str, object] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)  # name -> question | default | model
    missing: list[str] = field(default_factory=list)
    invalid: dict[str, str] = field(default_factory=dict)  # name -> why
    # Dates, years and numbers of the question that no parameter took: a constraint the query
    # cannot apply ("nel 3° trimestre" to a yearly query). Computing anyway would answer
    # another question with a number.
    unbound: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing and not self.invalid


# Thoth's two languages: a catalog written in one is asked in the other too ("pagato" of an
# Italian question meets "pagano" of an English catalog's Italian example only through the
# Italian stemmer). The other language's stems are tagged so the two never mix.
_OTHER_LANGUAGE: Final = {"it": "en", "en": "it"}
_OTHER_TAG: Final = 1 << 40


def numbers_as_digits(question: str) -> str:
    """The question with its numbers said in words written in digits, in Italian and English
    ("entro sessanta giorni" -> "entro 60 giorni", "nel duemilaventitre" -> "nel 2023"), by
    text2num: a number in words is a value like any other, and one the query does not take
    ("sessanta" where the query counts within 30 days) must not pass as a word. Articles stay
    words ("un ricovero", "one visit")."""
    for language in ("it", "en"):
        question = alpha2digit(question, language)
    return question


class Matcher:
    """Stems of the workspace's language (BM25's own analyser: stopwords and stemmer) and, for
    Italian and English, of the other one too. A text matches another in either language:
    every word of a value must occur in the question stemmed one way, or the other way."""

    def __init__(self, language: str) -> None:
        self._encoder = Bm25Encoder(language, 1.0)
        other = _OTHER_LANGUAGE.get(language.split("-")[0].casefold())
        self._other = Bm25Encoder(other, 1.0) if other else None
        # The catalog's values and synonyms are stemmed for every question: once is enough.
        self._cache: dict[str, tuple[frozenset[int], ...]] = {}

    def variants(self, text: str) -> tuple[frozenset[int], ...]:
        """The text's stems in each language (the other one's tagged)."""
        found = self._cache.get(text)
        if found is None:
            folded = fold(text)
            found = (frozenset(self._encoder.query(folded).indices),)
            if self._other is not None:
                other = self._other.query(folded).indices
                found += (frozenset(s | _OTHER_TAG for s in other),)
            if len(self._cache) < 100_000:
                self._cache[text] = found
        return found

    def stems(self, text: str) -> frozenset[int]:
        """Every stem of the text, in both languages: the pool others are matched within."""
        return frozenset().union(*self.variants(text))

    def within(self, text: str, pool: frozenset[int]) -> int:
        """How many stems of `text` occur in `pool` in one language (the most), 0 when no
        language has them all."""
        return max((len(v) for v in self.variants(text) if v and v <= pool), default=0)

    def is_content(self, word: str) -> bool:
        """A word no language drops as a stopword."""
        return all(self.variants(word))


def find_enum_value(
    question_stems: frozenset[int],
    choices: Mapping[str, Sequence[str]],
    matcher: Matcher,
) -> tuple[str | None, list[str]]:
    """The value whose own words or synonym's words all occur in the question; the most
    specific (most words) wins. Returns (value, []) or (None, the tied values)."""
    best: dict[str, int] = {}
    for value, words in choices.items():
        for text in (value, *words):
            matched = matcher.within(text, question_stems)
            if matched:
                best[value] = max(best.get(value, 0), matched)
    if not best:
        return None, []
    top = max(best.values())
    leaders = sorted(v for v, n in best.items() if n == top)
    return (leaders[0], []) if len(leaders) == 1 else (None, leaders)


def _dates(text: str) -> tuple[list[date], str]:
    """Dates in the text, in order, and the text without them (so their year is not a year)."""
    found: list[tuple[int, date]] = []
    rest = text

    def iso(m: re.Match[str]) -> date:
        return date(int(m[1]), int(m[2]), int(m[3]))

    def dmy(m: re.Match[str]) -> date:
        return date(int(m[3]), int(m[2]), int(m[1]))

    def words(m: re.Match[str]) -> date:
        return date(int(m[3]), _MONTHS[m[2].casefold()], int(m[1]))

    builders: list[tuple[re.Pattern[str], Callable[[re.Match[str]], date]]] = [
        (_ISO_DATE, iso),
        (_YMD_DATE, iso),
        (_DMY_DATE, dmy),
        (_WORD_DATE, words),
    ]
    for pattern, build in builders:
        for m in pattern.finditer(rest):
            try:
                found.append((m.start(), build(m)))
            except ValueError:
                continue  # 31/02/2024 is no date
        rest = _blank(pattern, rest)
    return [d for _, d in sorted(found, key=lambda p: p[0])], rest


def _quarters(text: str) -> tuple[list[int], str]:
    """Quarters in the (folded) text, in order, and the text without them."""
    found: list[int] = []
    for m in _QUARTER.finditer(text):
        digit = m[1] or m[2] or m[3]
        word = (m[4] or m[5] or "").casefold()
        found.append(int(digit) if digit else _ORDINALS.get(word, 0) or int(word[0]))
    return found, _blank(_QUARTER, text)


def _month_names(folded: str, question: str) -> list[int]:
    """Months named in words outside a full date ("a marzo", "in September"), in order."""
    found = [(m.start(), _MONTHS[m[1].casefold()]) for m in _MONTH_NAME.finditer(folded)]
    found += [(m.start(), 5) for m in _MAY.finditer(question)]
    return [month for _, month in sorted(found)]


def month_names(month: int) -> frozenset[str]:
    """The Italian and English names of a month (1-12), lower case."""
    return frozenset(name for name, number in _MONTHS.items() if number == month)


@dataclass
class _Values:
    """The values a text states, in order, and the text without them."""

    dates: list[date]
    quarters: list[int]
    months: list[int]
    years: list[int]
    numbers: list[str]
    rest: str


def _read_values(text: str, question: str, today: date) -> _Values:
    """Dates, quarters, months by name, years (also relative ones) and other numbers, each
    blanked before the next is read: a date's year is no year, a quarter's digit no number.
    `question`: the text as written (only a capitalised "May" is a month)."""
    dates, rest = _dates(text)
    quarters, rest = _quarters(rest)
    months = _month_names(rest, question)
    rest = _blank(_MONTH_NAME, _blank(_MAY, rest))
    relative, rest = _relative_years(rest, today)
    years = [
        year
        for _, year in sorted([*relative, *((m.start(), int(m[1])) for m in _YEAR.finditer(rest))])
    ]
    rest = _blank(_PER_HUNDRED, _blank(_YEAR, rest))
    numbers = [m[1] for m in _NUMBER.finditer(rest)]
    return _Values(dates, quarters, months, years, numbers, _blank(_NUMBER, rest))


def without_values(text: str) -> str:
    """The text with its dates, years, quarters, month names and numbers blanked: what it
    asks, not for which values (routing compares that; extraction reads the values)."""
    return " ".join(_read_values(text, text, date.today()).rest.split())


def _blank(pattern: re.Pattern[str], text: str) -> str:
    """`text` with `pattern`'s matches turned to spaces of the same length (positions kept)."""
    return pattern.sub(lambda m: " " * len(m[0]), text)


def _relative_years(text: str, today: date) -> tuple[list[tuple[int, int]], str]:
    """(position, year) of the years said relative to `today`, and the text without them."""
    found: list[tuple[int, int]] = []
    for pattern, offset in _RELATIVE_YEARS:
        found += [(m.start(), today.year + offset) for m in pattern.finditer(text)]
        text = _blank(pattern, text)
    return found, text


def extract(
    question: str,
    query: CatalogQuery,
    enum_choices: Mapping[str, Mapping[str, Sequence[str]]],
    matcher: Matcher,
    today: date | None = None,
) -> Extraction:
    """Parameters of `query` found in `question`; `enum_choices[name]` maps each allowed value
    of an enum parameter to its synonyms. "L'anno scorso", "this year" are years relative to
    `today` (the calendar's, by default)."""
    out = Extraction()
    folded = fold(question)
    question_stems = matcher.stems(question)
    said = _read_values(folded, question, today or date.today())
    quoted = [m[1].strip() for m in _QUOTED.finditer(question)]
    pools: dict[str, list[Any]] = {
        "date": said.dates,
        "year": said.years,
        "month": said.months,
        "quarter": said.quarters,
        "integer": said.numbers,
        "decimal": said.numbers,  # shared: a number goes to the first numeric parameter
        "text": quoted,
    }
    for name, param in query.parameters.items():
        found: object = None
        if param.type == "enum":
            value, tied = find_enum_value(question_stems, enum_choices.get(name, {}), matcher)
            if tied:
                out.invalid[name] = f"the question names several values ({', '.join(tied)})"
                continue
            found = value
        else:
            pool = pools[param.type]
            if pool:
                found = pool.pop(0)
        if found is not None:
            _accept(out, name, param, found, "question", enum_choices.get(name))
        else:
            _absent(out, name, param, enum_choices.get(name))
    # A number the query's own text states ("a 30 giorni") is part of its definition.
    own = {m[1] for t in (query.description, *query.examples) for m in _NUMBER.finditer(fold(t))}
    # A number inside a name of a value the question took ("codice 1" for `rosso`) is that name.
    for k, v in out.values.items():
        choices = enum_choices.get(k, {})
        if query.parameters[k].type == "enum" and str(v) in choices:
            names = (str(v), *choices[str(v)])
            own |= {m[1] for t in names if fold(t) in folded for m in _NUMBER.finditer(fold(t))}
    # A month an enumeration of month names took ("marzo" as a value of `mese`) is bound.
    named = {str(v).casefold() for k, v in out.values.items() if query.parameters[k].type == "enum"}
    out.unbound = (
        [str(v) for v in (*pools["date"], *pools["year"])]
        + [f"month {m}" for m in pools["month"] if not month_names(m) & named]
        + [f"Q{q}" for q in pools["quarter"]]
        + [n for n in dict.fromkeys(pools["integer"]) if n not in own]
    )
    return out


def validate(
    query: CatalogQuery,
    given: Mapping[str, object],
    enum_choices: Mapping[str, Mapping[str, Sequence[str]]],
    origin: str = "model",
) -> Extraction:
    """Values proposed for `query` (a model's function call): unknown names, wrong types,
    values out of range or not allowed are `invalid`; defaults fill the rest."""
    out = Extraction()
    for name in sorted(set(given) - set(query.parameters)):
        out.invalid[name] = "not a parameter of this query"
    for name, param in query.parameters.items():
        value = given.get(name)
        if value is not None:
            _accept(out, name, param, value, origin, enum_choices.get(name))
        else:
            _absent(out, name, param, enum_choices.get(name))
    return out


def _absent(
    out: Extraction, name: str, param: Parameter, choices: Mapping[str, Sequence[str]] | None
) -> None:
    """Not given: the default; else NULL for an optional parameter (its SQL reads
    `:name IS NULL OR …`: every parameter is bound, none left unset); else missing."""
    if param.default is not None:
        _accept(out, name, param, param.default, "default", choices)
    elif param.is_required:
        out.missing.append(name)
    else:
        out.values[name] = None
        out.origin[name] = "absent"


def _accept(
    out: Extraction,
    name: str,
    param: Parameter,
    raw: object,
    origin: str,
    choices: Mapping[str, Sequence[str]] | None,
) -> None:
    try:
        value = coerce(param, raw, f"{name} =")
        if param.type == "enum":
            allowed = list(choices or {})
            if str(value) not in allowed:
                shown = ", ".join(allowed[:12]) + (" ..." if len(allowed) > 12 else "")
                raise ValueError(f"{name} = {value!r} is not an allowed value ({shown})")
        else:
            check_range(param, value, f"{name} =")
    except ValueError as exc:
        out.invalid[name] = str(exc)
        return
    out.values[name] = value
    out.origin[name] = origin
