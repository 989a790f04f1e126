"""The read-only database every dialect implements, and what the dialects share: the refusal
codes, the sample-value rules, the one way a refusal is worded."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType
from typing import Final

from thoth.database.model import (
    ColumnInfo,
    DatabaseUnavailable,
    Dialect,
    QueryResult,
    SchemaSnapshot,
    StatementRefused,
)

DOCS: Final = "docs/database.md"
ROLE_RECIPE: Final = f'{DOCS}, "A read-only PostgreSQL role"'

# Samples are read from the first rows of a table only: a bounded read, whatever its size.
SAMPLE_PREFIX_ROWS: Final = 10_000
SAMPLE_MAX_CHARS: Final = 80

# The stable codes of a StatementRefused (docs/database.md, "What is refused").
READ_ONLY: Final = "read_only"  # a write, DDL, ATTACH/PRAGMA, transaction control
STATEMENT_TIMEOUT: Final = "statement_timeout"
MULTIPLE_STATEMENTS: Final = "multiple_statements"
PERMISSION_DENIED: Final = "permission_denied"  # the role lacks a privilege (SET ROLE, a table)
STATEMENT_INVALID: Final = "statement_invalid"  # syntax error, unknown table or column, …
VALUE_TOO_LARGE: Final = "value_too_large"  # one value over MAX_VALUE_BYTES, or out of memory
# A DatabaseUnavailable's codes besides the class default (`database_unavailable`).
ROLE_UNSAFE: Final = "database_role_unsafe"
SCHEMA_MISSING: Final = "database_schema_missing"

_WHAT_TO_DO: Final = {
    READ_ONLY: "Thoth only reads this database: send one SELECT (or WITH … SELECT)",
    STATEMENT_TIMEOUT: "make the query cheaper (filter, aggregate, add LIMIT) or raise "
    "database.statement_timeout_seconds in thoth.toml",
    MULTIPLE_STATEMENTS: "send exactly one SELECT statement",
    PERMISSION_DENIED: "query only the tables of database.schemas the role may read; "
    f"privileges are granted as in {ROLE_RECIPE}",
    STATEMENT_INVALID: "fix the statement (names as the schema index lists them)",
    VALUE_TOO_LARGE: "a read-only query returns figures and short texts: do not build huge "
    "values (zeroblob, repeat, printf with a width), aggregate instead",
}

# What one statement may allocate and return (docs/database.md, "Bounded statements"): a value
# (string or blob) of at most MAX_VALUE_BYTES; SQLite's heap at most SQLITE_HEAP_BYTES for the
# whole process (SQLite has no per-connection heap limit); PostgreSQL's sorts and hashes
# work_mem each; a result at most MAX_RESULT_BYTES, counted while it is fetched, then cut with
# `truncated_by = "byte_limit"` (rows over the row limit: "row_limit").
MAX_VALUE_BYTES: Final = 16 * 1024 * 1024
SQLITE_HEAP_BYTES: Final = 1024 * 1024 * 1024
PG_WORK_MEM: Final = "32MB"
MAX_RESULT_BYTES: Final = 16 * 1024 * 1024
ROW_LIMIT: Final = "row_limit"
BYTE_LIMIT: Final = "byte_limit"


def value_bytes(value: object) -> int:
    """What one fetched value weighs, roughly: its text or its bytes; a number 16."""
    if isinstance(value, str | bytes | bytearray | memoryview):
        return len(value)
    return 16


def cap_rows(
    rows: Iterator[tuple[object, ...]], limit: int, max_bytes: int = MAX_RESULT_BYTES
) -> tuple[list[tuple[object, ...]], str | None]:
    """At most `limit` rows and `max_bytes` of values from `rows` (fetched lazily), and why it
    stopped early: ROW_LIMIT, BYTE_LIMIT, or None when everything was read."""
    kept: list[tuple[object, ...]] = []
    size = 0
    for row in rows:
        if len(kept) == limit:
            return kept, ROW_LIMIT
        size += sum(value_bytes(v) for v in row)
        if size > max_bytes:
            return kept, BYTE_LIMIT
        kept.append(tuple(row))
    return kept, None


MaySample = Callable[[str, str, ColumnInfo], bool]
# Values of a statement's named parameters (`:name` in the SQL, thoth.database.params).
Params = Mapping[str, object]


def refused(what: str, reason: str, code: str) -> StatementRefused:
    """The refusal of one statement: what was refused, the database's own words, what to do."""
    reason = reason.strip()
    return StatementRefused(
        f"{what}: {reason} -> {_WHAT_TO_DO[code]}",
        reason,
        code=code,
    )


def sample_text(value: object) -> str | None:
    """A sample as the schema index stores it: text cut to SAMPLE_MAX_CHARS; None for binary
    values, which say nothing to a reader."""
    if value is None or isinstance(value, bytes | bytearray | memoryview):
        return None
    text = value if isinstance(value, str) else str(value)
    return text[:SAMPLE_MAX_CHARS]


def closed(dialect: Dialect) -> DatabaseUnavailable:
    return DatabaseUnavailable(
        f"the {dialect} database is closed -> open it again with thoth.database.open_database"
    )


class ReadOnlyDatabase(ABC):
    """One open database, read-only by the database's own enforcement. A context manager:
    `with open_database(...) as db:` closes it on the way out."""

    dialect: Dialect

    @abstractmethod
    def ping(self) -> None:
        """Raise DatabaseUnavailable when the database cannot be read any more."""

    @abstractmethod
    def explain(self, sql: str, params: Params | None = None) -> tuple[str, ...]:
        """The database's plan of `sql`, one line per element; StatementRefused when the
        database refuses it. `params`: the values of its `:name` parameters, bound by the
        database (never pasted into the text)."""

    @abstractmethod
    def run(self, sql: str, *, limit: int, params: Params | None = None) -> QueryResult:
        """At most `limit` rows of `sql` (`truncated` when there were more), its `:name`
        parameters bound to `params`."""

    @abstractmethod
    def introspect(self, *, sample_values: int, may_sample: MaySample) -> SchemaSnapshot:
        """Tables and views of the declared schemas. A column gets up to `sample_values`
        distinct non-null values (most frequent first, from the first SAMPLE_PREFIX_ROWS rows)
        only when `may_sample(schema, table, column)` allows it."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection; closing twice is harmless."""

    def __enter__(self) -> ReadOnlyDatabase:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
