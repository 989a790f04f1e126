"""The words of a computed answer: the figures with their labels and units, the data date next
to them, and the query and parameters that computed them. Deterministic: no model writes a
number the store did not return."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from datetime import date
from decimal import Decimal

from thoth.analytics.catalog import CatalogQuery
from thoth.analytics.store import Computation, json_value
from thoth.answer.seams import FigureColumn
from thoth.answer.wording import Wording
from thoth.markup import markdown_table


def figure(value: object, unit: str | None, language: str = "it") -> str:
    """A value as a reader expects it: thousands separated, decimals with the language's
    mark, the unit after it."""
    if isinstance(value, bool) or value is None:
        text = "—" if value is None else str(value)
    elif isinstance(value, int):
        text = f"{value:,}"
    elif isinstance(value, float | Decimal):
        text = f"{float(value):,.2f}".rstrip("0").rstrip(".")
    elif isinstance(value, date):
        text = value.isoformat()
    else:
        text = str(value)
    if (
        language == "it"
        and isinstance(value, int | float | Decimal)
        and not isinstance(value, bool)
    ):
        text = text.replace(",", "\u2009").replace(".", ",").replace("\u2009", ".")
    return f"{text} {unit}" if unit and value is not None else text


def parameters_text(values: Mapping[str, object], wording: Wording) -> str:
    if not values:
        return wording.no_parameters
    return ", ".join(f"{k} = {json_value(v)}" for k, v in values.items())


def _nan(value: int | float | Decimal) -> bool:
    # Decimal's own test (math.isnan converts it to float first).
    return value.is_nan() if isinstance(value, Decimal) else math.isnan(value)


def extreme_text(
    columns: Sequence[FigureColumn],
    computation: Computation,
    asked: Collection[str],
    wording: Wording,
    language: str = "it",
) -> str | None:
    """The sentence naming the row(s) that hold a table's lowest or highest figure, when the
    question asks the minimum or the maximum (not both); None when it cannot be told surely:
    a truncated table (the extreme may be among the rows cut), not exactly one figure column
    (which figure is meant is not guessed), no label column, a value that is no number, every
    value NULL. Chosen by the values, never by the rows' order; ties all named."""
    lowest, highest = "minimum" in asked, "maximum" in asked
    if lowest == highest or computation.truncated:
        return None
    figures = [i for i, c in enumerate(columns) if c.kind in ("quantity", "amount")]
    labels = [i for i in range(len(columns)) if i not in figures]
    if len(figures) != 1 or not labels:
        return None
    at = figures[0]
    cells = [row[at] for row in computation.rows if row[at] is not None]
    values = [v for v in cells if isinstance(v, int | float | Decimal) and not isinstance(v, bool)]
    # A value that is no number, or NaN (unordered): the extreme cannot be told.
    if not values or len(values) != len(cells) or any(map(_nan, values)):
        return None
    extreme = min(values) if lowest else max(values)
    named = [
        ", ".join(figure(row[i], None, language) for i in labels)
        for row in computation.rows
        if row[at] is not None and row[at] == extreme
    ]
    template = wording.figure_lowest if lowest else wording.figure_highest
    column = columns[at]
    return template.format(
        figure=column.label, value=figure(extreme, column.unit, language), rows="; ".join(named)
    )


def computed_text(
    query: CatalogQuery,
    columns: Sequence[FigureColumn],
    computation: Computation,
    wording: Wording,
    language: str = "it",
    *,
    asked: Collection[str] = (),
) -> str:
    """value: "Ricoveri: 4 ricoveri (dati aggiornati al 2025-06-30)."; row: each label and
    value; table: a Markdown table, then the date, opened by the row(s) holding the extreme
    when `asked` (the question's measures) is the minimum or the maximum. Then the query and
    its parameters."""
    dated = wording.data_date.format(date=computation.data_date)
    rows = computation.rows
    if query.result.shape == "value" and len(rows) == 1 and len(columns) == 1:
        c = columns[0]
        body = f"{c.label}: {figure(rows[0][0], c.unit, language)} ({dated})."
    elif query.result.shape == "row" and len(rows) == 1:
        parts = [
            f"{c.label}: {figure(v, c.unit, language)}"
            for c, v in zip(columns, rows[0], strict=True)
        ]
        body = "; ".join(parts) + f" ({dated})."
    else:
        header = [c.label + (f" ({c.unit})" if c.unit else "") for c in columns]
        cells = [[figure(v, None, language) for v in row] for row in rows]
        body = f"{query.description} ({dated}):\n\n" + markdown_table(header, cells)
        if computation.truncated:
            body += f"\n\n(… {len(rows)}+)"
        extreme = extreme_text(columns, computation, asked, wording, language)
        if extreme is not None:
            body = f"{extreme}\n\n{body}"
    source = wording.computed_by.format(
        query=query.id, parameters=parameters_text(computation.parameters, wording)
    )
    return f"{body}\n\n{source}"
