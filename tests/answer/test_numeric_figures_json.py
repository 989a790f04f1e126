"""The figures of a computed answer are JSON as PostgreSQL returns them: `numeric` (an avg(), a
round(), a sum of bigint) arrives as Decimal, a date column as a date. Found on a PostgreSQL
store: every average crashed `tht ask --json` and was missing from the answer log."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

from thoth.answer.seams import FigureColumn, NumericAnswer
from thoth.evaluation.answers import first_figure


def _answer(*row: object) -> NumericAnswer:
    columns = tuple(FigureColumn(f"c{i}", f"c{i}", "quantity") for i in range(len(row)))
    return NumericAnswer("computed", columns=columns, rows=(row,))


def test_numeric_values_are_json_numbers_and_dates_iso_text() -> None:
    figures = _answer(Decimal("512.3"), Decimal("1234"), date(2016, 3, 3), 7, 0.25).figures()
    assert json.loads(json.dumps(figures))["rows"] == [[512.3, 1234, "2016-03-03", 7, 0.25]]


def test_a_decimal_a_float_cannot_hold_keeps_every_digit_as_text() -> None:
    exact = Decimal("12345678901234567.89")
    assert _answer(exact).figures()["rows"] == [["12345678901234567.89"]]


def test_the_evaluation_reads_a_postgres_average_as_the_first_figure() -> None:
    rows = _answer("Fresno", Decimal("48.6")).figures()["rows"]
    assert first_figure(rows) == 48.6
