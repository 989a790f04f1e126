"""Seams between the answer service and what the composition root plugs into it.

- `AnalyticsBranch`: level 3, the first fork. It decides, for every question, whether a
  reviewed catalog query computes it (`computed`), needs a parameter the question lacks
  (`needs_parameter`), failed (`failed`), or is not a question for the store (`not_covered`:
  the text path). Without `[analytics]` the composition root injects `NoAnalytics`, which
  covers nothing, so the service holds no `if`.
- `Pseudonymizer`: applied to everything sent to an external model and to its reply, and to
  result rows before they reach one. It lives in `thoth.privacy` (the restructurer and the
  session driver use it too) and is re-exported here; the composition root injects the real
  one or `NoPseudonymizer`, an identity, so the hooks hold no `if`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any, Literal, Protocol

from thoth.privacy import NoPseudonymizer, Pseudonymizer

__all__ = [
    "AnalyticsBranch",
    "FigureColumn",
    "NoAnalytics",
    "NoPseudonymizer",
    "NumericAnswer",
    "NumericOutcome",
    "Pseudonymizer",
]

NumericOutcome = Literal["computed", "needs_parameter", "not_covered", "failed"]


@dataclass(frozen=True)
class FigureColumn:
    name: str
    label: str
    kind: str  # thoth.config.ColumnKind
    unit: str | None = None


@dataclass(frozen=True)
class NumericAnswer:
    """What the analytics branch decided for one question.

    computed: `text` states the figures and the data date; `columns`/`rows` are the result,
    `provenance` how it was computed (query id, catalog revision, parameters as bound, SQL as
    executed, row count, data date). needs_parameter: `text` names what is missing or not
    allowed. failed: `error_code` and `text` say why. not_covered: the text path answers;
    `figure_requested` when the question asks a figure no query computes."""

    outcome: NumericOutcome
    query_id: str | None = None
    description: str = ""
    text: str = ""
    columns: tuple[FigureColumn, ...] = ()
    rows: tuple[tuple[Any, ...], ...] = ()
    provenance: dict[str, Any] | None = None
    error_code: str | None = None
    figure_requested: bool = False
    # Offline the similarity band only suggests a figure was asked: the sentence is hedged.
    figure_hedged: bool = False
    # Offline: the closest query no gate refused scored below the threshold ({query_id,
    # score, threshold}): said instead of "no query computes it".
    below_threshold: dict[str, Any] | None = None
    data_date: str | None = None
    # needs_parameter: the required parameters the question lacks, and the values not allowed
    # (name -> why).
    missing: tuple[str, ...] = ()
    invalid: dict[str, str] = field(default_factory=dict)
    # needs_parameter [ambiguous_query]: the catalog queries that fit the question equally.
    candidates: tuple[str, ...] = ()
    diagnostics: dict[str, Any] = field(default_factory=dict)
    degraded: tuple[str, ...] = ()

    def figures(self) -> dict[str, Any]:
        return {
            "columns": [
                {"name": c.name, "label": c.label, "kind": c.kind, "unit": c.unit}
                for c in self.columns
            ],
            "rows": [[figure_json(v) for v in r] for r in self.rows],
        }


def figure_json(value: Any) -> Any:
    """A result cell as JSON carries it. PostgreSQL returns `numeric` (avg(), round(), a sum of
    bigint) as Decimal: a whole one becomes an int, one a float holds exactly a float, any
    other keeps every digit as text. Dates and times become ISO text."""
    if isinstance(value, Decimal):
        if value.is_finite() and value == value.to_integral_value():
            return int(value)
        as_float = float(value)
        return as_float if Decimal(repr(as_float)) == value else str(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return value


class AnalyticsBranch(Protocol):
    def answer(self, question: str, labels: Sequence[str]) -> NumericAnswer:
        """The first fork for one question asked with `labels` (never raises for a store
        failure: `failed`; a figure whose labels are not all among `labels` is not served)."""
        ...


class NoAnalytics:
    """No analytics store configured: every question takes the text path."""

    def answer(self, question: str, labels: Sequence[str]) -> NumericAnswer:
        return NumericAnswer("not_covered", diagnostics={"reason": "no [analytics] store"})
