"""Issue 28, point 3 (figures are checked): a figure of an answer must occur in a source (at
some scale, rounded as written) or follow by one arithmetic step from figures the answer states
and a source holds. Correct roundings and derivations are never flagged; an invented figure
always is."""

from __future__ import annotations

import pytest

from thoth.figures import check, figures

TABLE = '{"columns": ["line", "Q2 2023", "Q2 2022"], "rows": [["Total net sales", 81797, 82959]]}'
TEXT = "Revenue was $4,210 million in the second quarter of 2023 and $3,972 million a year earlier."
ITALIAN = "Il tasso di riammissione è stato del 5,9% (64 ricoveri indice, 6 riammissioni)."
SOURCES = (TABLE, TEXT, ITALIAN)


@pytest.mark.parametrize(
    "answer",
    [
        "Total net sales were $81,797 million.",  # as written
        "Total net sales were $81.8 billion.",  # another scale, rounded
        "Net sales: 81,797.",
        "Revenue was $4.21 billion.",
        "Il tasso di riammissione è del 5,9%.",  # Italian decimals
        "Il tasso è stato del 5.9 per cento.",
        "I ricavi sono stati di 4.210 milioni di dollari.",  # Italian thousands
        # one step the answer states: a growth, a difference, a ratio
        "Revenue grew 6.0% to $4,210 million from $3,972 million.",
        "Revenue rose by $238 million, from $3,972 million to $4,210 million.",
        "Net sales fell 1.4%, from $82,959 million to $81,797 million.",
        "6 of 64 index admissions were readmitted: 9.4%.",
    ],
)
def test_a_correct_figure_rounding_or_derivation_is_supported(answer: str) -> None:
    assert check(answer, SOURCES).unsupported == ()


@pytest.mark.parametrize(
    ("answer", "invented"),
    [
        ("Total net sales were $91.8 billion.", "$91.8 billion"),
        ("Revenue was $4,310 million.", "$4,310 million"),
        ("Il tasso di riammissione è del 6,9%.", "6,9%"),
        # a growth whose operands the answer does not state is not derived
        ("Revenue grew 6.0% in the quarter.", "6.0%"),
        ("Revenue grew 7.5% to $4,210 million from $3,972 million.", "7.5%"),
    ],
)
def test_an_invented_figure_is_unsupported(answer: str, invented: str) -> None:
    assert check(answer, SOURCES).unsupported == (invented,)


def test_years_and_counts_are_not_figures() -> None:
    assert figures("In 2023 the company opened 12 stores in 5 countries.") == []
    assert [f.text for f in figures("$12 and 12% and 1,200 and 1.5 and 3 million")] == [
        "$12",
        "12%",
        "1,200",
        "1.5",
        "3 million",
    ]


@pytest.mark.parametrize(
    ("answer", "held_by"),
    [
        ("Total net sales were $81.8 billion.", {"$81.8 billion": (0,)}),
        ("Il tasso è del 5,9%.", {"5,9%": (2,)}),
        # a derived figure rests on the sources of its two operands, and only those
        (
            "Revenue grew 6.0% to $4,210 million from $3,972 million; net sales $81,797.",
            {"6.0%": (1,), "$4,210 million": (1,), "$3,972 million": (1,), "$81,797": (0,)},
        ),
        ("Net sales: $91.8 billion.", {}),  # unsupported: held by nothing
    ],
)
def test_each_supported_figure_names_the_sources_that_hold_it(
    answer: str, held_by: dict[str, tuple[int, ...]]
) -> None:
    assert check(answer, SOURCES).held_by == held_by


def test_a_statement_cell_reads_parentheses_as_a_negative_and_a_dash_as_nil() -> None:
    from decimal import Decimal

    from thoth.figures import statement_cell

    assert statement_cell("$1,234") == Decimal(1234)
    assert statement_cell("(567)") == Decimal(-567)
    assert statement_cell("$ (15)") == Decimal(-15)
    assert statement_cell("—") == Decimal(0)
    for not_a_number in ("12%", "n/a", "(567", "Level 2", ""):
        assert statement_cell(not_a_number) is None, not_a_number
