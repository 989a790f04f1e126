"""What Thoth accepts as the SQL of a database session, per dialect: exactly one read-only
query. PostgreSQL: thoth.sqlcheck's read-only query check (PostgreSQL's own parser). SQLite:
sqlglot's SQLite parser, the same refusal codes where the rule is the same.

This is the first gate only: the database refuses writes by itself (thoth.database.sqlite,
thoth.database.postgres), whatever passes here."""

from __future__ import annotations

import logging
from typing import Final

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from thoth.database.model import Dialect
from thoth.sqlcheck import SqlReason, SqlVerdict, bounded, check_read_only_query, too_deep

_ONE_QUERY: Final = "write exactly one read-only SELECT (or WITH … SELECT)"
# Statements, or parts of one, that are not a read: by sqlglot's node type.
_NOT_READS: Final = (
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Merge,
    exp.Create,
    exp.Drop,
    exp.Alter,
    exp.Command,
    exp.Pragma,
    exp.Attach,
    exp.Detach,
    exp.Transaction,
    exp.Set,
    exp.Use,
)
_FUNCTIONS_REFUSED: Final = {
    "load_extension": "loads a shared library into the database process",
    "fts3_tokenizer": "swaps the full-text tokenizer, a pointer into the process",
    "random": "is volatile: it gives a different result at every call for the same row",
    "randomblob": "is volatile: it gives a different result at every call for the same row",
    "changes": "reveals information about the connection",
    "total_changes": "reveals information about the connection",
    "last_insert_rowid": "reveals information about the connection",
    "sqlite_version": "reveals information about the server",
    "sqlite_source_id": "reveals information about the server",
    "sqlite_compileoption_get": "reveals information about the server",
    "sqlite_compileoption_used": "reveals information about the server",
    "sqlite_offset": "reveals where a row is stored in the file",
}


def check_statement(sql: str, dialect: Dialect) -> SqlVerdict:
    """Whether `sql` is exactly one read-only SELECT/WITH statement in `dialect`; the
    refusals carry thoth.sqlcheck's stable codes and say what to do."""
    if dialect == "postgresql":
        return check_read_only_query(sql)
    return _check_sqlite(sql)


def _refuse(code: str, message: str) -> SqlVerdict:
    return SqlVerdict((SqlReason(code, message),))


def _check_sqlite(sql: str) -> SqlVerdict:
    text = sql.strip()
    if not text.rstrip(";").strip():
        return _refuse("empty", f"empty SQL: {_ONE_QUERY}")
    refused = bounded(text)
    if refused is not None:
        return refused
    try:
        return _check_sqlite_text(text)
    except RecursionError:
        return too_deep("SQLite")


def _check_sqlite_text(text: str) -> SqlVerdict:
    try:
        tokens = sqlglot.tokenize(text, read="sqlite")
        # sqlglot logs a warning for each statement it keeps as an opaque Command: refused
        # below anyway, so the warning would only be noise.
        logger = logging.getLogger("sqlglot")
        level = logger.level
        logger.setLevel(logging.ERROR)
        try:
            parsed = [s for s in sqlglot.parse(text, read="sqlite") if s is not None]
        finally:
            logger.setLevel(level)
    except SqlglotError as exc:
        first = " ".join(str(exc).split())[:200]
        return _refuse("parse_error", f"does not parse as SQLite: {first}; {_ONE_QUERY}")
    if not parsed:
        return _refuse("empty", f"empty SQL: {_ONE_QUERY}")
    if len(parsed) != 1:
        return _refuse("statements", f"{len(parsed)} statements: {_ONE_QUERY}")
    statement = parsed[0]
    if not isinstance(statement, exp.Select | exp.SetOperation | exp.Values):
        return _refuse(
            "not_select",
            f"a `{_leading_words(text)}` statement is not a read-only query: only one SELECT "
            "(or WITH … SELECT) is accepted",
        )
    reasons: list[SqlReason] = []
    if any(t.comments for t in tokens):
        reasons.append(
            SqlReason(
                "comment",
                "a comment (`--` or `/* */`) is not accepted: it can hide SQL or cut off what "
                "follows when the text is composed into a query; remove it",
            )
        )
    for node in statement.walk():
        reasons += _node_reasons(node)
    return SqlVerdict(tuple(dict.fromkeys(reasons)))


def _node_reasons(node: exp.Expr) -> list[SqlReason]:
    if isinstance(node, _NOT_READS):
        cte = node.find_ancestor(exp.CTE)
        verb = type(node).__name__.upper()
        if cte is not None:
            return [
                SqlReason(
                    "data_modifying_cte",
                    f"the WITH query `{cte.alias}` is a data-modifying {verb}: every WITH query "
                    "must be a SELECT",
                )
            ]
        return [SqlReason("not_select", f"a {verb} inside the query: {_ONE_QUERY}")]
    if isinstance(node, exp.Into):
        return [
            SqlReason(
                "select_into",
                "SELECT … INTO creates a table: a read-only query returns rows; remove INTO",
            )
        ]
    if isinstance(node, exp.Lock):
        return [SqlReason("row_locking", "a row lock (FOR UPDATE/SHARE): remove it")]
    if isinstance(node, exp.Table):
        name = node.name.lower()
        if name.startswith(("sqlite_", "pragma_")):
            return [
                SqlReason(
                    "system_catalog",
                    f"`{node.name}` is a SQLite system table or PRAGMA function: Thoth's SQL "
                    "reads the database's own tables only",
                )
            ]
    if isinstance(node, exp.Func):
        name = _function_name(node)
        if name.startswith("pragma_"):
            return [
                SqlReason(
                    "system_catalog",
                    f"`{name}` is a SQLite PRAGMA function: Thoth's SQL reads the database's "
                    "own tables only",
                )
            ]
        why = _FUNCTIONS_REFUSED.get(name)
        if why is not None:
            return [
                SqlReason(
                    "function_refused",
                    f"function `{name}` is refused: it {why}; remove it — Thoth never runs it",
                )
            ]
    return []


def _function_name(node: exp.Func) -> str:
    """The function's name as SQLite spells it (sqlglot types many: random() is Rand)."""
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return node.sql(dialect="sqlite").split("(", 1)[0].strip().lower()


def _leading_words(text: str) -> str:
    return " ".join(text.split()[:2]).upper()
