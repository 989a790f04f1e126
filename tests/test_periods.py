"""Issue 24, point 2 (periods): the quarters a question asks and the quarters a filing reports
on, in both directions — "Q2 2023" and "three months ended July 1, 2023" — with fiscal
calendars whose year does not end in December."""

from __future__ import annotations

import pytest

from thoth.periods import (
    asked_quarters,
    covered_quarters,
    covers,
    fiscal_quarter,
    is_quarter_term,
    period_phrases,
    quarter_of,
    stated_quarters,
)


@pytest.mark.parametrize(
    ("text", "quarters"),
    [
        # Apple (52/53 weeks), NVIDIA (year ending in January), a calendar quarter
        ("For the quarterly period ended July 1, 2023", {(2023, 2)}),
        ("Three Months Ended | July 30, 2023 | July 31, 2022", {(2023, 2), (2022, 2)}),
        ("three months ended September 30, 2023 and 2022", {(2023, 3)}),
        # year to date: no figure of any one quarter (a walk through Apple's filing found
        # "Q4 2021" answered from "six months ended March 26, 2022")
        ("Nine Months Ended September 30, 2023", set()),
        ("Six months ended April 1, 2023", set()),
        ("nel trimestre chiuso al 30 giugno 2023", {(2023, 2)}),
        # only the dates the opening closes: not the half year's, not "as of" a balance date
        (
            "Three Months Ended April 1, 2023 | Three Months Ended March 26, 2022 | Six Months "
            "Ended April 1, 2023 | Six Months Ended March 26, 2022",
            {(2023, 1), (2022, 1)},
        ),
        (
            "three months ended March 26, 2022 that was in deferred revenue as of December 25, 2021",
            {(2022, 1)},
        ),
        ("notes due February 15, 2030; revenue grew", set()),
    ],
)
def test_a_text_reports_on_the_quarters_its_period_ends_close(
    text: str, quarters: set[tuple[int, int]]
) -> None:
    assert covered_quarters(text) == quarters


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("What was Apple's revenue in Q2 2023?", [(2023, 2)]),
        ("2023 Q3 results of Intel", [(2023, 3)]),
        ("Net sales in Q2'23", [(2023, 2)]),
        ("the second quarter of 2023", [(2023, 2)]),
        ("Ricavi del terzo trimestre 2023", [(2023, 3)]),
        ("Ricavi del 3° trimestre 2023", [(2023, 3)]),  # Italian writes ordinals as 3° / 3º
        ("il 2º trimestre del 2024", [(2024, 2)]),
        ("In Q4, how did 2022 go?", [(2022, 4)]),  # the question's one year
        ("Q1 of 2022 against 2023", [(None, 1)]),  # two years: no guess
        ("What was the revenue?", []),
    ],
)
def test_a_question_names_its_quarters(question: str, asked: list[tuple[int | None, int]]) -> None:
    assert asked_quarters(question) == asked


def test_fiscal_quarters_map_to_the_calendar() -> None:
    assert fiscal_quarter(2023, 2, 9) == (2023, 1)  # Apple: fiscal Q2 2023 is Jan-Mar 2023
    assert fiscal_quarter(2024, 2, 1) == (2023, 2)  # NVIDIA: fiscal Q2 2024 is May-Jul 2023
    assert fiscal_quarter(2024, 1, 6) == (2023, 3)  # Microsoft: fiscal Q1 2024 is Jul-Sep 2023
    assert fiscal_quarter(2023, 4, 12) == (2023, 4)
    assert quarter_of(__import__("datetime").date(2023, 4, 1)) == [(2023, 1)]


def test_a_quarter_is_covered_as_calendar_or_as_the_entitys_fiscal_quarter() -> None:
    apple_filing = {(2023, 1), (2022, 1)}  # quarter ended April 1, 2023 and its comparative
    assert not covers([(2023, 2)], apple_filing)  # calendar Q2 2023: not this filing
    assert covers([(2023, 2)], apple_filing, [9])  # Apple's fiscal Q2 2023: this filing
    assert not covers([(2021, 4)], apple_filing, [9])
    assert covers([(None, 1)], apple_filing)


def test_quarter_tokens_are_told_from_other_periods() -> None:
    assert is_quarter_term("Q2") and is_quarter_term("2023Q3")
    assert not is_quarter_term("10-Q") and not is_quarter_term("2023")


@pytest.mark.parametrize(
    ("question", "stated"),
    [
        # the filing's own words in the question: an exact period end, a calendar quarter
        (
            "Apple's net sales for the three months ended July 1, 2023?",
            [("three months ended July 1, 2023", (2023, 2))],
        ),
        # year to date asks about the quarter its period closes
        (
            "revenue in the nine months ended September 30, 2023",
            [("nine months ended September 30, 2023", (2023, 3))],
        ),
        ("for the quarter ended April 1, 2023", [("quarter ended April 1, 2023", (2023, 1))]),
        (
            "ricavi del trimestre chiuso al 30 giugno 2023",
            [("trimestre chiuso al 30 giugno 2023", (2023, 2))],
        ),
        (
            "ricavi dei sei mesi chiusi al 30 giugno 2023",
            [("sei mesi chiusi al 30 giugno 2023", (2023, 2))],
        ),
        # Italian writes the day after "il" as often as after "al", with an ordinal mark on the
        # first (found asking over Apple's April filing: July's quarter was answered `found`)
        (
            "vendite nel trimestre chiuso il 1 luglio 2023",
            [("trimestre chiuso il 1 luglio 2023", (2023, 2))],
        ),
        (
            "utile dei tre mesi terminati il 1° luglio 2023",
            [("tre mesi terminati il 1° luglio 2023", (2023, 2))],
        ),
        (
            "net sales for the quarter ending July 1, 2023",
            [("quarter ending July 1, 2023", (2023, 2))],
        ),
        ("notes due February 15, 2030", []),
        ("What was the revenue in Q2 2023?", []),
    ],
)
def test_a_question_states_period_ends_as_the_filings_write_them(
    question: str, stated: list[tuple[str, tuple[int, int]]]
) -> None:
    assert stated_quarters(question) == stated


def test_a_stated_period_end_is_never_read_through_a_fiscal_calendar() -> None:
    """ "Three months ended July 1, 2023" is Apple's fiscal Q3 and calendar Q2: the filing that
    covers April 1, 2023 (fiscal Q2, calendar Q1) must not pass for it, as "Q2 2023" would."""
    apple_april_filing = {(2023, 1), (2022, 1)}
    [(_, quarter)] = stated_quarters("net sales for the three months ended July 1, 2023")
    assert quarter not in apple_april_filing
    assert covers([(2023, 2)], apple_april_filing, [9])  # the named quarter, read as fiscal


def test_period_phrases_name_when_in_both_languages() -> None:
    assert period_phrases("Revenue in the third quarter of 2023, Q2 2023 and year to date") == [
        "third quarter of 2023",
        "Q2 2023",
        "year to date",
    ]
    assert period_phrases("le scorte del terzo trimestre e dei nove mesi") == [
        "terzo trimestre",
        "nove mesi",
    ]
    row = "Foreign exchange contracts — Three Months Ended September 30, 2023: 206"
    assert period_phrases(row) == ["Three Months Ended", "September 30, 2023"]
    assert period_phrases("Raw materials and finished goods") == []


def test_a_text_that_states_a_year_or_a_longer_span_but_no_quarter_says_which() -> None:
    from thoth.periods import asks_a_quarter, span_without_quarter

    # A year alone, a half year, nine months: the figure is not a quarter's.
    assert span_without_quarter("Nel 2024 il tasso di riammissione è stato del 5,9%.") == "2024"
    assert span_without_quarter("Net sales for fiscal 2023 grew 4%.") == "2023"
    text = "Against the end of 2022, depreciation in 2023 falls by $4.2 billion."
    assert span_without_quarter(text) == "2022, 2023"
    assert (
        span_without_quarter("R&D was $16.1 billion for the first nine months of 2023.")
        == "nine months"
    )
    # A quarter, named or dated, or a date (a balance at a day): no such span.
    assert span_without_quarter("Net sales decreased 3% during the second quarter of 2023.") is None
    assert span_without_quarter("Nel 3° trimestre 2024 il tasso è stato del 5,5%.") is None
    assert span_without_quarter("Revenue — Three Months Ended July 1, 2023: $81,797") is None
    assert span_without_quarter("Total inventories — Sep 30, 2023: $11,466") is None
    assert span_without_quarter("Revenue in the quarter was $4.2 billion.") is None
    assert span_without_quarter("In July 2023, Kove claimed $1.2 billion in damages.") is None
    # No period at all: nothing to say.
    assert span_without_quarter("The effective tax rate was 16.2%.") is None
    # What the question asks: a quarter, by name or by its period end.
    assert asks_a_quarter("Qual è stato il tasso di riammissione nel 3° trimestre 2024?")
    assert asks_a_quarter("What were net sales for the three months ended July 1, 2023?")
    assert asks_a_quarter("What was revenue in Q2 2023?")
    assert not asks_a_quarter("Qual è stato il tasso di riammissione nel 2024?")
