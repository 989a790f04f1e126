"""The database question->SQL sessions ask about, opened read-only and enforced by the
database itself (a read-only PostgreSQL transaction with a statement timeout; a read-only
SQLite URI with an authorizer). One layer shared by sessions (schema index, SQL runs) and the
analytics catalog."""

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

__all__ = [
    "ColumnInfo",
    "DatabaseError",
    "DatabaseUnavailable",
    "Dialect",
    "ForeignKey",
    "QueryResult",
    "SchemaSnapshot",
    "StatementRefused",
    "TableInfo",
    "qualified",
    "quote_ident",
]
