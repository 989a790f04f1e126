"""Figures in a text, and whether a source supports them: "81.8 billion" against "81,797" in a
table in millions, "12,5%" against 0.125 computed, a growth written out of two figures.

A figure is a number written as a figure: with a currency, a percent sign, a thousands
separator, decimals or a scale word (thousand, million, billion; mila, milioni, miliardi).
Plain integers ("2023", "5 years", "12 ricoveri") are not figures: years and counts are too
often in passing to be checked as claims.

A figure is supported when a source number, at some scale (units, thousands, millions,
billions: a table's "in millions" is rarely next to its cells), rounds to it at the precision
it is written with ("81.8 billion": to the nearest 0.1 billion) — or when one arithmetic step
on two source numbers does (a sum, a difference, a ratio, a percentage, a growth). Written
numbers are read in both conventions where they are ambiguous ("1,234" is 1234 or 1.234).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Final

_SCALES: Final = {
    "thousand": 3,
    "thousands": 3,
    "k": 3,
    "mila": 3,
    "migliaia": 3,
    "million": 6,
    "millions": 6,
    "mn": 6,
    "mln": 6,
    "m": 6,
    "milione": 6,
    "milioni": 6,
    "billion": 9,
    "billions": 9,
    "bn": 9,
    "b": 9,
    "miliardo": 9,
    "miliardi": 9,
    "mld": 9,
    "mrd": 9,
    "trillion": 12,
}
_SCALE: Final = "|".join(sorted(_SCALES, key=len, reverse=True))
_NUMBER: Final = re.compile(
    r"(?P<cur>[$€£]\s?|(?:USD|EUR|GBP)\s)?"
    r"(?<![\w.,])(?P<num>\d{1,3}(?:[.,\u202f ]\d{3})+(?:[.,]\d+)?|\d+(?:[.,]\d+)?)(?![\w])"
    r"(?P<pct>\s?%|\s?per\s?cent\b|\s?percent\b)?"
    rf"(?:\s?(?P<scale>{_SCALE})\b\.?)?",
    re.IGNORECASE,
)
# The scale multipliers a source number may be written at (a table in millions says so once).
_SOURCE_SCALES: Final = (0, 3, 6, 9)
# How many source numbers the pairwise steps combine (the first ones, in reading order).
MAX_PAIRED: Final = 200


@dataclass(frozen=True)
class Figure:
    text: str  # as written
    # every reading of it, scale applied, with its precision (half of it is the rounding the
    # writer may have done: "81.8 billion" is 81.8e9 to the nearest 1e8)
    readings: tuple[tuple[Decimal, Decimal], ...]
    percent: bool


def _readings(num: str) -> list[tuple[Decimal, int]]:
    """(value, decimals written) for each convention the digits allow."""
    plain = num.replace("\u202f", "").replace(" ", "")
    out: list[tuple[Decimal, int]] = []
    for thousands, point in ((",", "."), (".", ",")):
        parts = plain.split(point)
        if len(parts) > 2:
            continue
        whole = parts[0]
        groups = whole.split(thousands)
        if len(groups) > 1 and (
            not 1 <= len(groups[0]) <= 3 or any(len(g) != 3 for g in groups[1:])
        ):
            continue
        digits = "".join(groups)
        decimals = parts[1] if len(parts) == 2 else ""
        try:
            value = Decimal(f"{digits}.{decimals}" if decimals else digits)
        except InvalidOperation:
            continue
        reading = (value, len(decimals))
        if reading not in out:
            out.append(reading)
    return out


# A cell of a financial statement: "$1,234", "(567)", "$ (15)", "12.5"; a dash is nil.
_STATEMENT_CELL: Final = re.compile(
    r"^\$?\s*(\()?\s*\$?\s*(\d{1,3}(?:,\d{3})*(?:\.\d+)?|\d+(?:\.\d+)?)\s*(\))?$"
)
_NIL: Final = ("—", "–", "-", "$—", "$ —")


def statement_cell(cell: str) -> Decimal | None:
    """A financial statement's cell as a number, in the filings' one convention: "$1,234" ->
    1234, "(567)" -> -567 (parentheses are a negative), a dash -> 0; None for anything else
    (a percentage, a word, an empty cell, an unbalanced parenthesis)."""
    text = cell.strip()
    if text in _NIL:
        return Decimal(0)
    m = _STATEMENT_CELL.match(text)
    if m is None or bool(m.group(1)) != bool(m.group(3)):
        return None
    value = Decimal(m.group(2).replace(",", ""))
    return -value if m.group(1) else value


def figures(text: str) -> list[Figure]:
    """The figures written in `text`, in order (see the module docstring for what counts)."""
    found: list[Figure] = []
    for m in _NUMBER.finditer(text):
        num, scale_word = m["num"], (m["scale"] or "").lower()
        separated = bool(re.search(r"\d[.,\u202f ]\d", num))
        if not (m["cur"] or m["pct"] or separated or scale_word):
            continue
        exponent = _SCALES.get(scale_word, 0)
        readings = tuple(
            (v.scaleb(exponent), Decimal(1).scaleb(exponent - d)) for v, d in _readings(num)
        )
        if readings:
            found.append(Figure(m.group(0).strip().rstrip("."), readings, bool(m["pct"])))
    return found


def numbers(text: str, shares_only: bool = False) -> list[Decimal]:
    """Every number of a source text (integers included), each reading, its scale word
    applied when one follows. `shares_only`: the numbers that can be a percentage — written
    with a percent sign or with decimals (a rate computed, 9.4; a fraction, 0.094, also as
    9.4) — never a plain integer: "6 riammissioni" supports no "6.0%"."""
    out: list[Decimal] = []
    for m in _NUMBER.finditer(text):
        exponent = _SCALES.get((m["scale"] or "").lower(), 0)
        for value, decimals in _readings(m["num"]):
            if not shares_only:
                out.append(value.scaleb(exponent))
            elif m["pct"]:
                out.append(value)
            elif decimals and not exponent:
                out.append(value)
                if value < 1:
                    out.append(value * 100)
    return list(dict.fromkeys(out))


def _step_results(a: Decimal, b: Decimal) -> tuple[Decimal, ...]:
    """The one-step results of `a` and `b` (in this order): sum, difference, ratio,
    percentage, growth."""
    if not b:
        return (a + b, a - b)
    return (a + b, a - b, a / b, a / b * 100, (a - b) / b * 100)


def _steps(operands: Sequence[Decimal]) -> list[Decimal]:
    """Every one-step result of two operands: sum, differences, ratios, percentages, growth."""
    out: set[Decimal] = set()
    for a, b in itertools.permutations(dict.fromkeys(operands), 2):
        out.update(_step_results(a, b))
    return sorted(out)


def _near(values: Sequence[Decimal], figure: Figure) -> bool:
    for value, precision in figure.readings:
        tolerance = precision / 2 * Decimal("1.0001")
        for exponent in (0,) if figure.percent else _SOURCE_SCALES:
            scale = Decimal(1).scaleb(exponent)
            low = (value - tolerance) / scale
            high = (value + tolerance) / scale
            i = bisect.bisect_left(values, low)
            if i < len(values) and values[i] <= high:
                return True
    return False


@dataclass(frozen=True)
class Check:
    """What the sources make of an answer's figures."""

    direct: tuple[str, ...]  # found in a source, at the precision written
    derived: tuple[str, ...]  # one arithmetic step on numbers the answer states and a source holds
    unsupported: tuple[str, ...]
    # For each supported figure, the sources (their indexes) it rests on: those holding it, or
    # for a derived figure those holding its two operands. What dates an analytics figure.
    held_by: dict[str, tuple[int, ...]] = field(default_factory=dict)


def check(answer: str, sources: Iterable[str]) -> Check:
    """Each figure of `answer` against the source texts: held by a source (at some scale,
    rounded as written), or one arithmetic step away from two numbers that the answer itself
    states and a source holds ("from $4,210 million to $4,460 million, up 5.9%"): the step is
    the answer's to state, so an operand nobody wrote never makes a figure supported."""
    texts = list(sources)
    each = [sorted(numbers(t)) for t in texts]
    each_share = [sorted(numbers(t, shares_only=True)) for t in texts]
    held = sorted(dict.fromkeys(n for ns in each for n in ns))
    shares = sorted(dict.fromkeys(n for ns in each_share for n in ns))
    written = figures(answer)
    direct = [f for f in written if _near(shares if f.percent else held, f)]
    # The operands: the answer's numbers (figures or not) that a source holds.
    operands = [v for v in numbers(answer) if _near(held, _exact(v))][:MAX_PAIRED]
    steps = _steps(operands)
    derived = [f for f in written if f not in direct and _near(steps, f)]
    held_by: dict[str, tuple[int, ...]] = {}
    for f in direct:
        own = each_share if f.percent else each
        held_by[f.text] = tuple(i for i, values in enumerate(own) if _near(values, f))
    for f in derived:
        held_by[f.text] = _operand_sources(f, operands, each)
    return Check(
        tuple(f.text for f in direct),
        tuple(f.text for f in derived),
        tuple(f.text for f in written if f not in direct and f not in derived),
        held_by,
    )


def _operand_sources(
    figure: Figure, operands: Sequence[Decimal], each: Sequence[Sequence[Decimal]]
) -> tuple[int, ...]:
    """The sources holding the operands of the steps that give `figure`."""
    found: set[int] = set()
    for a, b in itertools.permutations(dict.fromkeys(operands), 2):
        if _near(sorted(_step_results(a, b)), figure):
            for value in (a, b):
                exact = _exact(value)
                found.update(i for i, values in enumerate(each) if _near(values, exact))
    return tuple(sorted(found))


def last_digit_unit(value: Decimal) -> Decimal:
    """One unit of a number's last digit: 1 for 3870, 0.01 for 0.18 (how far rounding moves it)."""
    exponent = value.as_tuple().exponent
    return Decimal(1).scaleb(exponent if isinstance(exponent, int) else 0)


def _exact(value: Decimal) -> Figure:
    """A number as a figure written to its last digit."""
    return Figure(str(value), ((value, last_digit_unit(value)),), False)
