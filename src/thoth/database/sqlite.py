"""SQLite, read-only by SQLite's own enforcement.

Each declared file is opened `mode=ro` (SQLite never writes nor creates it), `main` as the
main database and every other schema ATTACHed under its name; then an authorizer allows only
reads (SELECT, reading columns, functions other than load_extension, recursive CTEs) and
refuses everything else when the statement is prepared: INSERT, UPDATE, DELETE, DDL, ATTACH,
DETACH, PRAGMA, transactions. A progress handler is the statement timeout. The sqlite3 module
prepares one statement per call and refuses a remainder."""

from __future__ import annotations

import math
import sqlite3
import time
from dataclasses import replace
from pathlib import Path
from typing import Final
from urllib.parse import quote

from thoth.config import DatabaseSettings
from thoth.database.base import (
    MAX_VALUE_BYTES,
    MULTIPLE_STATEMENTS,
    READ_ONLY,
    SAMPLE_PREFIX_ROWS,
    SQLITE_HEAP_BYTES,
    STATEMENT_INVALID,
    STATEMENT_TIMEOUT,
    VALUE_TOO_LARGE,
    MaySample,
    Params,
    ReadOnlyDatabase,
    cap_rows,
    closed,
    refused,
    sample_text,
)
from thoth.database.model import (
    ColumnInfo,
    DatabaseUnavailable,
    Dialect,
    ForeignKey,
    QueryResult,
    SchemaSnapshot,
    StatementRefused,
    TableInfo,
)

# The authorizer's action codes, by name, for messages.
_ACTIONS: Final = {
    getattr(sqlite3, name): name.removeprefix("SQLITE_").replace("_", " ")
    for name in dir(sqlite3)
    if name.startswith(("SQLITE_CREATE", "SQLITE_DROP"))
    or name
    in {
        "SQLITE_INSERT",
        "SQLITE_UPDATE",
        "SQLITE_DELETE",
        "SQLITE_PRAGMA",
        "SQLITE_TRANSACTION",
        "SQLITE_ATTACH",
        "SQLITE_DETACH",
        "SQLITE_ALTER_TABLE",
        "SQLITE_REINDEX",
        "SQLITE_ANALYZE",
        "SQLITE_SAVEPOINT",
        "SQLITE_FUNCTION",
    }
}
_READS: Final = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE})
# What a views-only database may still read directly: the catalog (names and DDL, no data).
_CATALOG_TABLES: Final = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master"})
# Functions that reach outside the database (load a shared library; swap a tokenizer pointer).
_REFUSED_FUNCTIONS: Final = frozenset({"load_extension", "fts3_tokenizer"})
# Read-only PRAGMAs, allowed only while Thoth itself introspects.
_INTROSPECTION_PRAGMAS: Final = frozenset({"table_xinfo", "foreign_key_list"})
# Opcodes that change a database file. Not Insert, Delete, IdxInsert: a read uses them on its
# own ephemeral tables (ORDER BY, DISTINCT, automatic indexes). What writes starts a write
# transaction (Transaction with P2 != 0), which is checked besides.
_WRITE_OPCODES: Final = frozenset(
    {"Vacuum", "OpenWrite", "CreateBtree", "Destroy", "Clear", "SetCookie", "DropTable",
     "DropIndex", "DropTrigger", "JournalMode"}
)  # fmt: skip
# How often (in virtual-machine instructions) the deadline is checked: well under 1 ms.
_PROGRESS_STEPS: Final = 10_000
_UNAVAILABLE_MARKERS: Final = (
    "not a database",
    "unable to open",
    "disk i/o",
    "malformed",
    "no such file",
)


def _describe(action: int, arg1: str | None, arg2: str | None, db: str | None) -> str:
    """What the authorizer refused, in words: `DELETE adt.admission`, `PRAGMA user_version 7`."""
    label = _ACTIONS.get(action, f"action {action}")
    if action == sqlite3.SQLITE_FUNCTION:
        target = f"{arg2}()"
    elif action == sqlite3.SQLITE_ALTER_TABLE:
        target = f"{arg1}.{arg2}"
    elif action in (sqlite3.SQLITE_PRAGMA, sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT):
        target = " ".join(p for p in (arg1, arg2) if p)
    else:
        target = ".".join(p for p in (db, arg1) if p)
    return f"{label} {target}".strip()


def _short(sql: str) -> str:
    text = " ".join(sql.split())
    return text if len(text) <= 120 else text[:117] + "..."


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _uri(path: Path) -> str:
    return f"file:{quote(str(path))}?mode=ro"


class SqliteDatabase(ReadOnlyDatabase):
    dialect: Dialect = "sqlite"

    def __init__(self, settings: DatabaseSettings, root: Path) -> None:
        self._settings = settings
        self._timeout = settings.statement_timeout_seconds
        self._paths = {schema: (root / rel).resolve() for schema, rel in settings.files.items()}
        for schema, path in self._paths.items():
            if not path.is_file():
                raise DatabaseUnavailable(
                    f"database.files.{schema}: no SQLite file at {path} -> fix the path in "
                    "thoth.toml (relative to the workspace root) or put the file there; Thoth "
                    "never creates it",
                    where=str(path),
                )
        self._deadline = math.inf
        self._cut: str | None = None  # why the last run's result was cut (base.cap_rows)
        self._denied: str | None = None
        self._introspecting = False
        self._views_only = settings.views_only
        self._views: set[tuple[str | None, str]] = set()
        self._view_reads: frozenset[tuple[str | None, str, str, str]] = frozenset()
        self._through_views: set[str] = set()
        self._tables: set[str] = set()  # base tables of every schema, lower-cased
        self._conn: sqlite3.Connection | None = self._open()

    # -- opening ---------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        main = self._paths.get("main")
        try:
            # Autocommit: the sqlite3 module issues no BEGIN of its own.
            conn = sqlite3.connect(
                _uri(main) if main else "file::memory:",
                uri=True,
                isolation_level=None,
            )
        except sqlite3.Error as exc:
            raise self._unavailable("main", exc) from exc
        try:
            for schema, path in self._paths.items():
                if schema == "main":
                    continue
                try:
                    conn.execute("ATTACH DATABASE ? AS ?", (_uri(path), schema))
                except sqlite3.Error as exc:
                    raise self._unavailable(schema, exc) from exc
            # No more files, not even the one VACUUM INTO would attach.
            conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, len(self._paths) - ("main" in self._paths))
            # No value bigger than this (zeroblob(1e9), printf('%.*c', 1e9, 'x')), and a heap
            # bound for the process: one statement cannot allocate gigabytes.
            conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
            conn.execute(f"PRAGMA hard_heap_limit = {SQLITE_HEAP_BYTES}")
            if self._views_only:
                try:
                    self._record_views(conn)
                except sqlite3.Error as exc:
                    raise self._unavailable(next(iter(self._paths)), exc) from exc
            conn.set_authorizer(self._authorize)
            conn.set_progress_handler(self._progress, _PROGRESS_STEPS)
            for schema in self._paths:  # reads each file's header and schema now
                try:
                    conn.execute(f"SELECT count(*) FROM {_quote(schema)}.sqlite_master").fetchone()
                except sqlite3.Error as exc:
                    raise self._unavailable(schema, exc) from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _unavailable(self, schema: str, exc: BaseException) -> DatabaseUnavailable:
        path = self._paths.get(schema)
        return DatabaseUnavailable(
            f"database.files.{schema}: cannot read the SQLite file {path} ({exc}) -> check that "
            "it is a SQLite database the user running tht may read",
            where=str(path),
        )

    # -- enforcement -----------------------------------------------------------------------

    def _authorize(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, view: str | None
    ) -> int:
        if action == sqlite3.SQLITE_READ and self._views_only:
            if self._view_read(arg1 or "", arg2 or "", db, view):
                return sqlite3.SQLITE_OK
            if self._denied is None:
                self._denied = f"reading {'.'.join(p for p in (db, arg1, arg2) if p)} " + (
                    "outside a view (this store is read through its views only)"
                )
            return sqlite3.SQLITE_DENY
        if action in _READS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() not in _REFUSED_FUNCTIONS:
            return sqlite3.SQLITE_OK
        if (
            action == sqlite3.SQLITE_PRAGMA
            and self._introspecting
            and (arg1 or "").lower() in _INTROSPECTION_PRAGMAS
        ):
            return sqlite3.SQLITE_OK
        if self._denied is None:
            self._denied = _describe(action, arg1, arg2, db)
        return sqlite3.SQLITE_DENY

    def _view_read(self, table: str, column: str, db: str | None, view: str | None) -> bool:
        """Views-only: may this SQLITE_READ happen? SQLite names the innermost view (or CTE:
        it reports both the same way) a read goes through. Allowed: the catalog; a view's own
        columns; a read exactly as one of the store's views makes it (recorded when the store
        was opened, so a CTE borrowing a view's name reads no more than that view does); and
        the row count SQLite's count(*) optimisation takes of a table the same statement
        already reads through a view (it reports that read with no view). Anything else,
        above all a column of a table named by the statement itself, is refused."""
        if table.lower() in _CATALOG_TABLES or (db, table) in self._views:
            return True
        if view and (db, table, column, view) in self._view_reads:
            self._through_views.add(table)
            return True
        if column or db is not None or view is not None:
            return False
        # A table-level read (count(*)) SQLite names without a schema: of a CTE (no table of
        # the store has that name), or of a table the statement already reads through a view.
        return table.lower() not in self._tables or table in self._through_views

    def _record_views(self, conn: sqlite3.Connection) -> None:
        """The views of every schema, and the reads each makes (compiling it with a recording
        authorizer): what a views-only statement may read."""
        reads: set[tuple[str | None, str, str, str]] = set()

        def record(
            action: int, arg1: str | None, arg2: str | None, db: str | None, view: str | None
        ) -> int:
            if action == sqlite3.SQLITE_READ and view:
                reads.add((db, arg1 or "", arg2 or "", view))
            return sqlite3.SQLITE_OK

        for schema in self._paths:
            s = _quote(schema)
            rows = conn.execute(f"SELECT type, name FROM {s}.sqlite_master").fetchall()
            names = [str(r[1]) for r in rows if r[0] == "view"]
            self._tables |= {str(r[1]).lower() for r in rows if r[0] == "table"}
            self._views |= {(schema, name) for name in names}
            conn.set_authorizer(record)
            try:
                for name in names:
                    conn.execute(f"EXPLAIN SELECT * FROM {s}.{_quote(name)}").fetchall()
            finally:
                conn.set_authorizer(None)
        self._view_reads = frozenset(reads)

    def _progress(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise closed(self.dialect)
        return self._conn

    def _execute(
        self,
        sql: str,
        params: tuple[object, ...] | Params = (),
        *,
        fetch: int | None = None,
        label: str | None = None,
        capped: bool = False,
    ) -> tuple[tuple[str, ...], list[tuple[object, ...]]]:
        """One statement under the deadline: its column names and up to `fetch` rows (all
        when None); every failure is a StatementRefused or DatabaseUnavailable naming
        `label` (the statement as the caller sent it; `sql` by default)."""
        conn = self._connection()
        self._denied = None
        self._through_views = set()
        self._deadline = time.monotonic() + self._timeout
        try:
            cursor = conn.execute(sql, params)
            try:
                columns = tuple(d[0] for d in cursor.description or ())
                if capped:
                    rows, self._cut = cap_rows(iter(cursor), fetch or 0)
                else:
                    rows = cursor.fetchall() if fetch is None else cursor.fetchmany(fetch)
            finally:
                cursor.close()
        except (sqlite3.Error, MemoryError) as exc:
            raise self._refusal(sql if label is None else label, exc) from exc
        finally:
            self._deadline = math.inf
        return columns, [tuple(r) for r in rows]

    def _refusal(
        self, sql: str, exc: sqlite3.Error | MemoryError
    ) -> StatementRefused | DatabaseUnavailable:
        message = str(exc)
        lowered = message.lower()
        statement = _short(sql)
        if isinstance(exc, sqlite3.ProgrammingError) and "one statement" in lowered:
            return refused(
                f"more than one statement refused ({statement})", message, MULTIPLE_STATEMENTS
            )
        if self._denied is not None:
            return refused(f"SQLite refused {self._denied} ({statement})", message, READ_ONLY)
        if "interrupted" in lowered and time.monotonic() > self._deadline:
            return refused(
                f"stopped after database.statement_timeout_seconds = {self._timeout:g} s "
                f"({statement})",
                message,
                STATEMENT_TIMEOUT,
            )
        if "readonly" in lowered or "read-only" in lowered:
            return refused(f"SQLite refused a write ({statement})", message, READ_ONLY)
        if "too big" in lowered or "out of memory" in lowered or isinstance(exc, MemoryError):
            return refused(
                f"SQLite stopped a value over {MAX_VALUE_BYTES:,} bytes ({statement})",
                message,
                VALUE_TOO_LARGE,
            )
        if any(marker in lowered for marker in _UNAVAILABLE_MARKERS):
            files = ", ".join(f"database.files.{s} = {p}" for s, p in self._paths.items())
            return DatabaseUnavailable(
                f"SQLite could not read the database ({message}) -> check the files ({files})"
            )
        return refused(f"SQLite refused the statement ({statement})", message, STATEMENT_INVALID)

    # -- the interface ---------------------------------------------------------------------

    def ping(self) -> None:
        for schema in self._paths:
            try:
                self._execute(f"SELECT count(*) FROM {_quote(schema)}.sqlite_master")
            except StatementRefused as exc:
                raise self._unavailable(schema, exc) from exc

    def explain(self, sql: str, params: Params | None = None) -> tuple[str, ...]:
        # EXPLAIN compiles without running, so the authorizer judges what it can; the compiled
        # program tells the rest (VACUUM and REINDEX take no authorization when compiled).
        bound = dict(params or {})
        _, program = self._execute("EXPLAIN " + sql, bound, label=sql)
        opcodes = {str(op[1]) for op in program}
        writes = sorted(
            {str(op[1]) for op in program if op[1] in _WRITE_OPCODES}
            | {"Transaction (write)" for op in program if op[1] == "Transaction" and op[3]}
        )
        if writes or "ResultRow" not in opcodes:
            why = f"writes ({', '.join(writes)})" if writes else "returns no rows"
            raise refused(
                f"SQLite refused the plan of {_short(sql)}: not a query",
                f"the compiled statement {why}",
                READ_ONLY,
            )
        _, rows = self._execute("EXPLAIN QUERY PLAN " + sql, bound, label=sql)
        depth: dict[object, int] = {0: -1}
        lines: list[str] = []
        for node_id, parent, _unused, detail in rows:
            level = depth.get(parent, -1) + 1
            depth[node_id] = level
            lines.append("  " * level + str(detail))
        return tuple(lines)

    def run(self, sql: str, *, limit: int, params: Params | None = None) -> QueryResult:
        started = time.perf_counter()
        self._cut = None
        columns, rows = self._execute(sql, dict(params or {}), fetch=limit, capped=True)
        duration_ms = (time.perf_counter() - started) * 1000
        return QueryResult(
            columns=columns,
            rows=tuple(rows),
            truncated=self._cut is not None,
            duration_ms=duration_ms,
            truncated_by=self._cut,
        )

    def introspect(self, *, sample_values: int, may_sample: MaySample) -> SchemaSnapshot:
        self._introspecting = True
        try:
            tables = [
                table
                for schema in self._paths
                for table in self._schema_tables(schema, sample_values, may_sample)
            ]
        finally:
            self._introspecting = False
        return SchemaSnapshot(self.dialect, tuple(_resolve_references(tables)))

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- introspection ---------------------------------------------------------------------

    def _schema_tables(
        self, schema: str, sample_values: int, may_sample: MaySample
    ) -> list[TableInfo]:
        s = _quote(schema)
        _, objects = self._execute(
            f"SELECT type, name FROM {s}.sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
        )
        tables: list[TableInfo] = []
        for kind, name in objects:
            assert isinstance(name, str) and kind in ("table", "view")
            t = _quote(name)
            _, info = self._execute(f"PRAGMA {s}.table_xinfo({t})")
            keyed = sorted((int(str(r[5])), str(r[1])) for r in info if int(str(r[5])) > 0)
            primary_key = tuple(col for _, col in keyed)
            columns: list[ColumnInfo] = []
            for _cid, col, declared, notnull, _default, pk, hidden in info:
                if hidden == 1:  # a virtual table's hidden column
                    continue
                col_type = str(declared or "").upper()
                rowid_alias = primary_key == (col,) and col_type == "INTEGER" and bool(pk)
                column = ColumnInfo(
                    name=str(col), type=col_type, nullable=not notnull and not rowid_alias
                )
                if sample_values > 0 and may_sample(schema, name, column):
                    column = replace(column, samples=self._samples(s, t, column, sample_values))
                columns.append(column)
            _, fk_rows = self._execute(f"PRAGMA {s}.foreign_key_list({t})")
            tables.append(
                TableInfo(
                    schema=schema,
                    name=name,
                    kind=kind,
                    columns=tuple(columns),
                    primary_key=primary_key,
                    foreign_keys=_foreign_keys(schema, fk_rows),
                )
            )
        return tables

    def _samples(self, s: str, t: str, column: ColumnInfo, n: int) -> tuple[str, ...]:
        c = _quote(column.name)
        _, rows = self._execute(
            f"SELECT v, count(*) AS n FROM (SELECT {c} AS v FROM {s}.{t} LIMIT ?) "
            "WHERE v IS NOT NULL GROUP BY v ORDER BY n DESC, v LIMIT ?",
            (SAMPLE_PREFIX_ROWS, n),
        )
        texts = (sample_text(r[0]) for r in rows)
        return tuple(dict.fromkeys(text for text in texts if text is not None))


def _foreign_keys(schema: str, rows: list[tuple[object, ...]]) -> tuple[ForeignKey, ...]:
    """PRAGMA foreign_key_list rows (id, seq, table, from, to, …) -> one ForeignKey per id;
    a `to` of NULL (the referenced primary key) is left empty for _resolve_references."""
    grouped: dict[object, list[tuple[object, ...]]] = {}
    for row in rows:
        grouped.setdefault(row[0], []).append(row)
    keys: list[ForeignKey] = []
    for _, parts in sorted(grouped.items(), key=lambda item: str(item[0])):
        parts.sort(key=lambda r: int(str(r[1])))
        keys.append(
            ForeignKey(
                columns=tuple(str(r[3]) for r in parts),
                ref_schema=schema,
                ref_table=str(parts[0][2]),
                ref_columns=tuple(str(r[4]) for r in parts if r[4] is not None),
            )
        )
    return tuple(keys)


def _resolve_references(tables: list[TableInfo]) -> list[TableInfo]:
    """`REFERENCES ward` without columns means ward's primary key."""
    keys = {(t.schema, t.name): t.primary_key for t in tables}
    resolved: list[TableInfo] = []
    for table in tables:
        fks = tuple(
            fk
            if fk.ref_columns
            else replace(fk, ref_columns=keys.get((fk.ref_schema, fk.ref_table), ()))
            for fk in table.foreign_keys
        )
        resolved.append(replace(table, foreign_keys=fks))
    return resolved
