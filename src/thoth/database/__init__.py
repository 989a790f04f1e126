"""The database question->SQL sessions ask about, opened read-only and enforced by the
database itself (a read-only PostgreSQL transaction with a statement timeout; a read-only
SQLite URI with an authorizer). One layer shared by sessions (schema index, SQL runs) and the
analytics catalog."""

from thoth.database.base import ReadOnlyDatabase
from thoth.database.connect import open_database
from thoth.database.model import (
    ColumnInfo,
    DatabaseError,
    DatabaseUnavailable,
    Dialect,
    ForeignKey,
    QueryResult,
    SchemaSnapshot,
    StatementRefused,
    TableInfo,
    qualified,
    quote_ident,
)
from thoth.database.statements import check_statement

__all__ = [
    "ColumnInfo",
    "DatabaseError",
    "DatabaseUnavailable",
    "Dialect",
    "ForeignKey",
    "QueryResult",
    "ReadOnlyDatabase",
    "SchemaSnapshot",
    "StatementRefused",
    "TableInfo",
    "check_statement",
    "open_database",
    "qualified",
    "quote_ident",
]
