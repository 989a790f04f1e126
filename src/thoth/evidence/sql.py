"""SQL checks with the real PostgreSQL parser (pglast)."""

from __future__ import annotations

from typing import Any

import pglast
from pglast.parser import ParseError


def _parse(sql: str) -> tuple[Any, ...] | str:
    try:
        return tuple(pglast.parse_sql(sql))
    except ParseError as exc:
        return str(exc)


def expression_error(sql: str) -> str | None:
    """None when `sql` is exactly one composable PostgreSQL expression, else why not."""
    text = sql.strip()
    if not text:
        return "empty SQL"
    if text.endswith(";"):
        return "ends with `;`: a composable expression has no statement terminator"
    as_statement = _parse(text)
    if not isinstance(as_statement, str):
        kinds = ", ".join(type(s.stmt).__name__ for s in as_statement)
        return (
            f"a complete statement ({kinds}) is not a formula: a formula is one expression "
            "(a full documented query belongs in an `example` unit)"
        )
    parsed = _parse(f"SELECT {text}")
    if isinstance(parsed, str):
        return f"not a valid PostgreSQL expression: {parsed}"
    if len(parsed) != 1:
        return "more than one statement: a formula is exactly one expression"
    select = parsed[0].stmt
    clauses = (
        "fromClause",
        "whereClause",
        "groupClause",
        "havingClause",
        "sortClause",
        "limitCount",
        "limitOffset",
        "windowClause",
        "intoClause",
        "distinctClause",
    )
    used = [c for c in clauses if getattr(select, c, None)]
    if used:
        return f"not a single expression: it carries query clauses ({', '.join(used)})"
    targets: tuple[Any, ...] = tuple(select.targetList or ())
    if len(targets) != 1:
        return f"{len(targets)} expressions separated by commas: a formula is exactly one"
    if targets[0].name:
        return f"an alias (AS {targets[0].name}) is not part of a composable expression"
    return None


def statement_error(sql: str) -> str | None:
    """None when `sql` parses as one or more complete PostgreSQL statements."""
    text = sql.strip()
    if not text:
        return "empty SQL"
    parsed = _parse(text)
    if isinstance(parsed, str):
        return f"does not parse as PostgreSQL: {parsed}"
    return None


def is_query(sql: str) -> bool:
    """True when `sql` is a complete SELECT/WITH query."""
    parsed = _parse(sql.strip())
    return not isinstance(parsed, str) and all(
        type(s.stmt).__name__ == "SelectStmt" for s in parsed
    )
