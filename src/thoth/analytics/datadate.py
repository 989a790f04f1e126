"""The data date read from `[analytics] data_date_sql`: one row, one value, a real date.

A number is served only with the date its data are current to; a data date that is not a date
(NULL, 0, 'null', 'ieri', 2025-02-30, a blob, a day far in the future, or the first of two
rows) would make a wrong number look checked. So the value is parsed, never passed on as it
came: a date or timestamp object, or text in ISO 8601 (`YYYY-MM-DD`, or a timestamp
`YYYY-MM-DD HH:MM[:SS]` with `T` or a space, optionally with a time zone). Anything else is
`data_date_unreadable`, naming what came back.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Final

from thoth.database.model import QueryResult
from thoth.errors import ThothError

# A refresh stamped a little ahead (time zones, a load that dates itself to the next morning)
# is tolerated up to this many days; beyond it the date is a mistake, not a data date.
FUTURE_TOLERANCE_DAYS: Final = 1
_NULL_WORDS: Final = frozenset({"", "null", "none", "nil", "nan", "n/a", "na", "-"})


class NotADataDate(ThothError):
    """What came back is not one date: the message says what it was."""

    code = "data_date_unreadable"


def data_date_of(result: QueryResult, today: date | None = None) -> str:
    """The ISO text of the one date `result` holds (the query ran with a limit of 2 rows, so a
    second row is seen); NotADataDate saying what came back otherwise."""
    if len(result.columns) != 1:
        raise NotADataDate(f"{len(result.columns)} columns came back, not one")
    if not result.rows:
        raise NotADataDate("no row came back (a refresh that did not finish?)")
    if len(result.rows) > 1 or result.truncated:
        raise NotADataDate("more than one row came back: the data date must be exactly one")
    when = parse_data_date(result.rows[0][0])
    day = when.date() if isinstance(when, datetime) else when
    limit = (today or datetime.now(UTC).date()) + timedelta(days=FUTURE_TOLERANCE_DAYS)
    if day > limit:
        raise NotADataDate(
            f"{when.isoformat()} is in the future (more than {FUTURE_TOLERANCE_DAYS} day "
            "ahead of today)"
        )
    return when.isoformat()


def parse_data_date(value: object) -> date | datetime:
    """A date or timestamp from a database value; NotADataDate naming the value otherwise."""
    if isinstance(value, datetime | date):
        return value
    if value is None:
        raise NotADataDate("NULL came back")
    if isinstance(value, bytes | bytearray | memoryview):
        raise NotADataDate("a binary value (a blob) came back")
    if isinstance(value, bool | int | float) or not isinstance(value, str):
        raise NotADataDate(f"{value!r} came back: a {type(value).__name__}, not a date")
    text = value.strip()
    if text.lower() in _NULL_WORDS:
        raise NotADataDate(f"{value!r} came back: no date")
    try:
        if len(text) == 10:
            return date.fromisoformat(text)
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise NotADataDate(
            f"{value!r} came back: not a date (YYYY-MM-DD or an ISO timestamp), or a day "
            "that does not exist"
        ) from None
