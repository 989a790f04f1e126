"""What Thoth knows of a database: its schema snapshot, query results and the errors of the
read-only layer. Plain frozen data, shared by the layer (`thoth.database`) and the schema
index (`thoth.schema`).

Names: a table is `schema.table`, a column `schema.table.column`; an identifier that is not
a plain lower-case SQL name is double-quoted (`main.frpm."County Name"`), as SQL would write
it, so a name can be pasted into a query as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final, Literal

from thoth.errors import ThothError

Dialect = Literal["sqlite", "postgresql"]
_PLAIN: Final = re.compile(r"[a-z_][a-z0-9_$]*")


def quote_ident(name: str) -> str:
    """`name` as SQL writes it: as it is when plain lower-case, else double-quoted."""
    if _PLAIN.fullmatch(name):
        return name
    return '"' + name.replace('"', '""') + '"'


def qualified(*parts: str) -> str:
    """`schema.table` or `schema.table.column`, each part quoted when it must be."""
    return ".".join(quote_ident(p) for p in parts)


@dataclass(frozen=True)
class ForeignKey:
    """`columns` of the owning table reference `ref_columns` of `ref_schema.ref_table`."""

    columns: tuple[str, ...]
    ref_schema: str
    ref_table: str
    ref_columns: tuple[str, ...]


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: str  # as the database declares it (upper-cased for SQLite's free-form types)
    nullable: bool = True
    comment: str = ""  # PostgreSQL COMMENT ON COLUMN; empty for SQLite
    # Distinct non-null values, most frequent first, read only when the caller allowed it
    # (privacy: never for identities or unclassified columns).
    samples: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableInfo:
    schema: str
    name: str
    kind: Literal["table", "view"] = "table"
    comment: str = ""
    columns: tuple[ColumnInfo, ...] = ()
    primary_key: tuple[str, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()

    @property
    def qualified(self) -> str:
        return qualified(self.schema, self.name)


@dataclass(frozen=True)
class SchemaSnapshot:
    dialect: Dialect
    tables: tuple[TableInfo, ...] = ()

    def table(self, schema: str, name: str) -> TableInfo | None:
        for t in self.tables:
            if t.schema == schema and t.name == name:
                return t
        return None


@dataclass(frozen=True)
class QueryResult:
    """Rows of one read-only statement. `truncated`: the result was cut, `truncated_by` says
    why ("row_limit": more rows than the limit; "byte_limit": more bytes than the cap)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]
    truncated: bool
    duration_ms: float
    notes: tuple[str, ...] = field(default=())
    truncated_by: str | None = None


class DatabaseError(ThothError):
    """Base of the read-only layer's errors."""


class DatabaseUnavailable(DatabaseError):
    """The database could not be reached or opened (unreachable server, wrong credentials,
    missing file, missing environment variable): nothing was read or recorded."""

    code = "database_unavailable"
    exit_code = 4


class StatementRefused(DatabaseError):
    """The database (or the read-only guard in front of it) refused a statement: a write, DDL,
    more than one statement, a timeout, a syntax error. `reason` is the database's own
    message."""

    code = "statement_refused"
    exit_code = 1

    def __init__(self, message: str, reason: str, *, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.reason = reason
