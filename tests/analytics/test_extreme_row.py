"""A question asking the minimum or the maximum of a ranked table ("Quale reparto ha avuto meno
ricoveri?") is answered with a sentence naming the row(s) holding the extreme of the figure
column, chosen by the values (never by the rows' position), ties all named, NULLs ignored; the
table stays below it. A truncated table, a count question, a table with no single figure column
get no such sentence: the extreme of the rows shown may not be the true one."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import yaml

from tests.analytics.conftest import PER_WARD, AnalyticsWorkspace, make_analytics_workspace
from tests.analytics.store import ADMISSIONS, WARDS
from tests.analytics.test_numeric_answers import ask
from thoth.analytics.catalog import CatalogQuery
from thoth.analytics.render import computed_text
from thoth.analytics.store import Computation
from thoth.answer.seams import FigureColumn
from thoth.answer.wording import ENGLISH, ITALIAN

LOWEST = ITALIAN.figure_lowest.split("{")[0]
HIGHEST = ITALIAN.figure_highest.split("{")[0]


def per_ward(regime: str, year: int) -> dict[str, int]:
    """Admissions per ward, computed here from the store's own rows."""
    names = dict(WARDS)
    counts: dict[str, int] = {}
    for _, code, reg, yr, _, _ in ADMISSIONS:
        if reg == regime and yr == year:
            counts[names[code]] = counts.get(names[code], 0) + 1
    return counts


def test_the_fewest_is_named_by_its_value_with_the_table_below(
    analytics_ws: AnalyticsWorkspace,
) -> None:
    counts = per_ward("ordinario", 2024)
    fewest = min(counts.values())
    wards = sorted(w for w, n in counts.items() if n == fewest)
    answer = ask(analytics_ws, "Quale reparto ha avuto meno ricoveri ordinari nel 2024?")
    assert answer.status == "computed" and answer.provenance is not None
    assert answer.provenance["query_id"] == "ricoveri-per-reparto"
    first = answer.text.split("\n")[0]
    assert first == ITALIAN.figure_lowest.format(
        figure="Ricoveri", value=f"{fewest} ricoveri", rows="; ".join(wards)
    )
    # The table stays, unchanged, below the sentence.
    for ward, n in counts.items():
        assert f"| {ward} | {n} |" in answer.text
    assert answer.text.index(first) < answer.text.index("| Reparto |")


def test_the_most_is_named(analytics_ws: AnalyticsWorkspace) -> None:
    counts = per_ward("ordinario", 2024)
    most = max(counts.values())
    wards = sorted(w for w, n in counts.items() if n == most)
    answer = ask(analytics_ws, "Quale reparto ha avuto più ricoveri ordinari nel 2024?")
    assert answer.status == "computed" and answer.provenance is not None
    assert answer.provenance["query_id"] == "ricoveri-per-reparto"
    assert answer.text.split("\n")[0] == ITALIAN.figure_highest.format(
        figure="Ricoveri", value=f"{most} ricoveri", rows="; ".join(wards)
    )


def test_a_count_question_gets_no_extreme(analytics_ws: AnalyticsWorkspace) -> None:
    answer = ask(analytics_ws, "Quanti ricoveri per reparto nel 2024?")
    assert answer.status == "computed" and answer.provenance is not None
    assert answer.provenance["query_id"] == "ricoveri-per-reparto"
    assert LOWEST not in answer.text and HIGHEST not in answer.text


def test_a_truncated_table_names_no_extreme(tmp_path: Path) -> None:
    # One row shown of two: the fewest is not among the rows shown.
    aw = make_analytics_workspace(tmp_path / "ws", extra="row_limit = 1\n")
    aw.activate()
    answer = ask(aw, "Quale reparto ha avuto meno ricoveri ordinari nel 2024?")
    assert answer.status == "computed" and answer.provenance is not None
    assert answer.provenance["truncated"] is True
    assert LOWEST not in answer.text and HIGHEST not in answer.text


QUERY = CatalogQuery.model_validate(yaml.safe_load(PER_WARD))
WARD = FigureColumn("reparto", "Reparto", "category")
ADMITTED = FigureColumn("ricoveri", "Ricoveri", "quantity", "ricoveri")


def computation(rows: list[tuple[object, ...]], *, truncated: bool = False) -> Computation:
    return Computation(
        query_id=QUERY.id,
        revision=None,
        parameters={"anno": 2024},
        sql="SELECT …",
        columns=("reparto", "ricoveri"),
        rows=tuple(rows),
        truncated=truncated,
        data_date="2025-06-30",
    )


def render(
    rows: list[tuple[object, ...]],
    asked: frozenset[str],
    *,
    columns: tuple[FigureColumn, ...] = (WARD, ADMITTED),
    truncated: bool = False,
    language: str = "it",
) -> str:
    wording = ITALIAN if language == "it" else ENGLISH
    return computed_text(
        QUERY,
        columns,
        computation(rows, truncated=truncated),
        wording,
        language,
        asked=asked,
    )


def test_ties_are_all_named_and_nulls_ignored() -> None:
    rows: list[tuple[object, ...]] = [("A", 5), ("B", None), ("C", 2), ("D", 2), ("E", 5)]
    low = render(rows, frozenset({"minimum"}))
    assert low.split("\n")[0] == ITALIAN.figure_lowest.format(
        figure="Ricoveri", value="2 ricoveri", rows="C; D"
    )
    high = render(rows, frozenset({"maximum", "count"}), language="en")
    assert high.split("\n")[0] == ENGLISH.figure_highest.format(
        figure="Ricoveri", value="5 ricoveri", rows="A; E"
    )
    # The table below keeps its order and its NULL.
    assert high.index("| A | 5 |") < high.index("| B | — |") < high.index("| E | 5 |")


def test_no_extreme_when_it_cannot_be_told() -> None:
    rows: list[tuple[object, ...]] = [("A", 5), ("C", 2)]
    plain = render(rows, frozenset())
    for text in (
        render(rows, frozenset({"minimum"}), truncated=True),
        render(rows, frozenset({"minimum", "maximum"})),  # both asked: which one?
        render(rows, frozenset({"count"})),
        render([("A", None)], frozenset({"minimum"})),  # every value NULL
        # A NaN is unordered: no extreme among values that include one.
        render([*rows, ("N", float("nan"))], frozenset({"minimum"})),
        render([*rows, ("N", Decimal("NaN"))], frozenset({"maximum"})),
        render([*rows, ("N", "n/d")], frozenset({"maximum"})),  # a value that is no number
        # Two figure columns, or none: which figure is meant is not guessed.
        render(rows, frozenset({"minimum"}), columns=(ADMITTED, ADMITTED)),
        render(rows, frozenset({"minimum"}), columns=(WARD, WARD)),
    ):
        assert LOWEST not in text and HIGHEST not in text
    assert render(rows, frozenset({"count"})) == plain
