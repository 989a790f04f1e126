"""PostgreSQL, read-only by PostgreSQL's own enforcement.

The URL comes from the environment variable `database.url_env`. The session defaults to
read-only transactions; each statement runs in its own `BEGIN READ ONLY` transaction with a
`SET LOCAL statement_timeout`, is sent with the extended protocol (one statement, never a
batch) and is always rolled back. A role that is a superuser, or may read or write the
server's files or run its programs, is refused at connection: a read-only transaction does
not stop `COPY … TO` a server file or `COPY … TO PROGRAM`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Final, TypeVar

import psycopg
from psycopg import pq, sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from thoth.config import DatabaseSettings
from thoth.database.base import (
    MULTIPLE_STATEMENTS,
    PERMISSION_DENIED,
    PG_WORK_MEM,
    READ_ONLY,
    ROLE_RECIPE,
    ROLE_UNSAFE,
    SAMPLE_PREFIX_ROWS,
    SCHEMA_MISSING,
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
from thoth.database.params import to_pyformat

T = TypeVar("T")
Cursor = psycopg.Cursor[tuple[object, ...]]

# The predefined roles whose members reach the server's file system or programs.
UNSAFE_ROLES: Final = ("pg_write_server_files", "pg_execute_server_program", "pg_read_server_files")
_SQLSTATE_CODES: Final = {
    "25006": READ_ONLY,  # read_only_sql_transaction
    "25001": READ_ONLY,  # active_sql_transaction: read-write mode after the first query
    "57014": STATEMENT_TIMEOUT,  # query_canceled
    "42501": PERMISSION_DENIED,  # insufficient_privilege
    "53200": VALUE_TOO_LARGE,  # out_of_memory
    "54000": VALUE_TOO_LARGE,  # program_limit_exceeded: a value over 1 GB
    "53400": VALUE_TOO_LARGE,  # configuration_limit_exceeded: temp_file_limit
}
# A plan node that writes (ModifyTable): EXPLAIN does not run it, Thoth refuses it anyway.
_WRITE_NODES: Final = ("Insert on ", "Update on ", "Delete on ", "Merge on ")
# libpq 17 fetches rows in chunks; older ones one row at a time.
_CHUNK: Final = 256 if pq.version() >= 170000 else 1


def _connect_timeout(statement_timeout: float) -> int:
    # libpq counts whole seconds and treats anything under 2 as 2.
    return int(min(30, max(2, statement_timeout)))


class PostgresDatabase(ReadOnlyDatabase):
    dialect: Dialect = "postgresql"

    def __init__(self, settings: DatabaseSettings, environ: Mapping[str, str]) -> None:
        self._settings = settings
        self._timeout_ms = max(1, round(settings.statement_timeout_seconds * 1000))
        var = settings.url_env or ""
        self._setting = f"database.url_env ({var})"
        url = environ.get(var, "").strip()
        if not url:
            raise DatabaseUnavailable(
                f"database.url_env: the environment variable {var} is not set or empty -> "
                f"export {var}=postgresql://<role>:<password>@<host>:<port>/<database> with a "
                f"read-only role ({ROLE_RECIPE})"
            )
        self._conninfo = self._target = self._password = ""
        self._conn: psycopg.Connection[tuple[object, ...]] | None = self._connect(url)
        try:
            self._check_role()
            if settings.views_only:
                self._check_views_only()
        except BaseException:
            self.close()
            raise

    # -- opening ---------------------------------------------------------------------------

    def _connect(self, url: str) -> psycopg.Connection[tuple[object, ...]]:
        # SQLAlchemy-style URLs (postgresql+psycopg://) name the same server.
        for prefix in ("postgresql+psycopg://", "postgresql+psycopg2://", "postgres+psycopg://"):
            if url.startswith(prefix):
                url = "postgresql://" + url.removeprefix(prefix)
        try:
            params = conninfo_to_dict(url)
        except psycopg.Error:
            # libpq's message quotes the text, which may hold a password: not repeated here.
            raise DatabaseUnavailable(
                f"{self._setting}: the value is not a PostgreSQL URL -> set it to "
                "postgresql://<role>:<password>@<host>:<port>/<database>"
            ) from None
        password = str(params.get("password") or "")
        self._target = "{}@{}:{}/{}".format(
            params.get("user", "<default user>"),
            params.get("host", "<local socket>"),
            params.get("port", 5432),
            params.get("dbname", "<default database>"),
        )
        options = f"{params.get('options') or ''} -c default_transaction_read_only=on".strip()
        self._conninfo = make_conninfo(
            url,
            options=options,
            application_name="thoth",
            connect_timeout=_connect_timeout(self._settings.statement_timeout_seconds),
        )
        self._password = password
        return self._open_connection()

    def _open_connection(self) -> psycopg.Connection[tuple[object, ...]]:
        try:
            # autocommit: Thoth opens (and always rolls back) each transaction itself
            return psycopg.connect(self._conninfo, autocommit=True)
        except psycopg.Error as exc:
            detail = " ".join(str(exc).split())
            if self._password:
                detail = detail.replace(self._password, "***")
            raise DatabaseUnavailable(
                f"{self._setting}: cannot connect to PostgreSQL as {self._target}: {detail} -> "
                f"check that the server runs and that the URL in {self._settings.url_env} "
                "names the right host, port, database, role and password"
            ) from None

    def _check_role(self) -> None:
        def check(cur: Cursor) -> tuple[object, ...] | None:
            cur.execute(
                "SELECT current_user::text, rolsuper, "
                + ", ".join("pg_has_role(current_user, %s, 'MEMBER')" for _ in UNSAFE_ROLES)
                + " FROM pg_roles WHERE rolname = current_user",
                UNSAFE_ROLES,
            )
            return cur.fetchone()

        row = self._transaction("checking the role", check)
        if row is None:  # pg_roles always lists the current user
            raise DatabaseUnavailable(f"{self._setting}: PostgreSQL did not describe the role")
        role, superuser, *members = row
        # A superuser is a member of every role: saying so once is enough.
        unsafe = (
            ["a superuser"]
            if superuser
            else [
                f"a member of {name}"
                for name, member in zip(UNSAFE_ROLES, members, strict=True)
                if member
            ]
        )
        if unsafe:
            raise DatabaseUnavailable(
                f"{self._setting}: the role {role} is {' and '.join(unsafe)}; a read-only "
                "transaction does not stop it writing the server's files (COPY … TO a file "
                f"or a program) -> connect as a dedicated read-only role ({ROLE_RECIPE})",
                code=ROLE_UNSAFE,
            )

    def _check_views_only(self) -> None:
        """A views-only store is confined by privileges: the role may read no base table
        anywhere, and nothing outside `schemas` (a view is read with its owner's rights, so
        the role reaches the tables only through the views)."""

        def readable(cur: Cursor) -> list[tuple[object, ...]]:
            return cur.execute(_READABLE_BEYOND_VIEWS, (list(self._settings.schemas),)).fetchall()

        found = self._transaction("checking what the role may read", readable)
        if found:
            shown = ", ".join(f"{r[0]}.{r[1]} ({r[2]})" for r in found)
            raise DatabaseUnavailable(
                f"{self._setting}: the role may read {shown}; the analytics store must see "
                f"only the views of {', '.join(self._settings.schemas)} -> revoke those "
                "privileges, or run the SQL `tht analytics grant-sql` prints for a role of "
                "its own",
                code=ROLE_UNSAFE,
            )

    # -- enforcement -----------------------------------------------------------------------

    def _connection(self) -> psycopg.Connection[tuple[object, ...]]:
        if self._conn is None or self._conn.closed:
            raise closed(self.dialect)
        return self._conn

    def _transaction(self, what: str, work: Callable[[Cursor], T]) -> T:
        """`work` in its own read-only transaction under the statement timeout, always
        rolled back; psycopg's errors become StatementRefused or DatabaseUnavailable."""
        conn = self._connection()
        try:
            try:
                with conn.cursor() as cur:
                    cur.execute("BEGIN READ ONLY")
                    # A SELECT, not SET LOCAL: it also takes the transaction's snapshot, after
                    # which PostgreSQL refuses to make the transaction read-write.
                    cur.execute(
                        "SELECT set_config('statement_timeout', %s, true), "
                        "set_config('work_mem', %s, true)",
                        (f"{self._timeout_ms}ms", PG_WORK_MEM),
                    )
                    return work(cur)
            finally:
                self._end_transaction(conn)
        except psycopg.Error as exc:
            raise self._refusal(what, exc) from exc

    def _end_transaction(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        """ROLLBACK, and release advisory locks; a session a statement left busy (a COPY …
        TO STDOUT still streaming) is replaced by a new one rather than nursed back, so
        nothing of it can carry over."""
        if conn.closed or conn.broken:
            return
        if conn.info.transaction_status != pq.TransactionStatus.ACTIVE:
            # Our own fixed text, in one round trip (simple protocol): a session-level
            # advisory lock is the one thing a read-only statement can leave behind a rollback.
            conn.execute("ROLLBACK; SELECT pg_advisory_unlock_all()")
            return
        conn.close()  # the server ends the session and rolls its transaction back
        self._conn = self._open_connection()

    def _refusal(self, what: str, exc: psycopg.Error) -> StatementRefused | DatabaseUnavailable:
        if isinstance(exc, psycopg.OperationalError) and (
            self._conn is None or self._conn.closed or self._conn.broken
        ):
            return DatabaseUnavailable(
                f"{self._setting}: lost the connection to PostgreSQL {self._target} while "
                f"{what}: {' '.join(str(exc).split())} -> check the server, then retry"
            )
        if (
            isinstance(exc, psycopg.ProgrammingError) and exc.sqlstate is None
        ):  # psycopg's own: the statement returned no rows
            return refused(
                f"{what}: not a query (PostgreSQL ran it in a read-only transaction, then it was "
                "rolled back)",
                " ".join(str(exc).split()),
                STATEMENT_INVALID,
            )
        reason = exc.diag.message_primary or " ".join(str(exc).split())
        code = _SQLSTATE_CODES.get(exc.sqlstate or "", STATEMENT_INVALID)
        if exc.sqlstate == "42601" and "multiple commands" in reason:
            code = MULTIPLE_STATEMENTS
        if code == STATEMENT_TIMEOUT:
            what += (
                " stopped after database.statement_timeout_seconds = "
                f"{self._settings.statement_timeout_seconds:g} s"
            )
        else:
            what = f"PostgreSQL refused {what}"
        return refused(what, reason, code)

    # -- the interface ---------------------------------------------------------------------

    def ping(self) -> None:
        try:
            self._transaction("a ping", lambda cur: cur.execute("SELECT 1").fetchone())
        except StatementRefused as exc:
            raise DatabaseUnavailable(
                f"{self._setting}: PostgreSQL {self._target} does not answer: {exc.reason} -> "
                "check the server, then retry"
            ) from exc

    def explain(self, sql_text: str, params: Params | None = None) -> tuple[str, ...]:
        what = f"the plan of {_short(sql_text)}"
        # Named parameters are bound by PostgreSQL (extended protocol), never pasted in.
        query, args = (to_pyformat(sql_text), dict(params)) if params else (sql_text, None)

        def work(cur: Cursor) -> tuple[str, ...]:
            lines = tuple(str(r[0]) for r in cur.stream("EXPLAIN " + query, args))
            for line in lines:
                node = line.strip().removeprefix("->").strip()
                if node.startswith(_WRITE_NODES):
                    raise refused(
                        f"{what}: a statement that writes", f"the plan writes: {node}", READ_ONLY
                    )
            # EXPLAIN plans what it does not run (CREATE TABLE … AS, SELECT … INTO); a cursor
            # is declared for one read-only query only, so PostgreSQL itself says whether the
            # statement is one. Nothing runs: the cursor is only declared, then rolled back.
            try:
                cur.execute("DECLARE thoth_explained NO SCROLL CURSOR FOR " + query, args)
            except psycopg.Error as exc:
                reason = exc.diag.message_primary or " ".join(str(exc).split())
                raise refused(
                    f"{what}: not one read-only query (PostgreSQL declares no cursor for it)",
                    reason,
                    READ_ONLY,
                ) from exc
            return lines

        return self._transaction(what, work)

    def run(self, sql_text: str, *, limit: int, params: Params | None = None) -> QueryResult:
        query, args = (to_pyformat(sql_text), dict(params)) if params else (sql_text, None)

        def work(cur: Cursor) -> QueryResult:
            started = time.perf_counter()
            stream: Iterator[tuple[object, ...]] = cur.stream(query, args, size=_CHUNK)
            try:
                rows, cut = cap_rows(stream, limit)
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()  # cancels what the server still sends
            description = cur.description
            if description is None and not rows:
                # psycopg's stream keeps no description when no row came: the statement is
                # described again, with no row to fetch (an empty result costs it twice).
                cur.execute(query, args)
                description = cur.description
            columns = tuple(d.name for d in description or ())
            return QueryResult(
                columns=columns,
                rows=tuple(rows),
                truncated=cut is not None,
                duration_ms=(time.perf_counter() - started) * 1000,
                truncated_by=cut,
            )

        return self._transaction(_short(sql_text), work)

    def introspect(self, *, sample_values: int, may_sample: MaySample) -> SchemaSnapshot:
        schemas = list(self._settings.schemas)
        visible = self._transaction(
            "listing the schemas",
            lambda cur: {
                str(r[0])
                for r in cur.execute(
                    "SELECT nspname FROM pg_namespace WHERE nspname = ANY(%s) "
                    "AND has_schema_privilege(oid, 'USAGE')",
                    (schemas,),
                )
            },
        )
        missing = [s for s in schemas if s not in visible]
        if missing:
            raise DatabaseUnavailable(
                f"database.schemas: {', '.join(missing)} not found, or the role may not use "
                f"it -> fix the list in thoth.toml, or grant USAGE ({ROLE_RECIPE})",
                code=SCHEMA_MISSING,
            )
        tables = self._transaction("reading the schema", lambda cur: _read_catalog(cur, schemas))
        if sample_values <= 0:
            return SchemaSnapshot(self.dialect, tuple(tables))
        sampled: list[TableInfo] = []
        for table in tables:
            columns = tuple(
                replace(column, samples=self._samples(table, column, sample_values))
                if may_sample(table.schema, table.name, column)
                else column
                for column in table.columns
            )
            sampled.append(replace(table, columns=columns))
        return SchemaSnapshot(self.dialect, tuple(sampled))

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _samples(self, table: TableInfo, column: ColumnInfo, n: int) -> tuple[str, ...]:
        query = sql.SQL(
            "SELECT v, count(*) AS n FROM "
            "(SELECT {column}::text AS v FROM {schema}.{table} LIMIT %s) AS prefix "
            "WHERE v IS NOT NULL GROUP BY v ORDER BY n DESC, v LIMIT %s"
        ).format(
            column=sql.Identifier(column.name),
            schema=sql.Identifier(table.schema),
            table=sql.Identifier(table.name),
        )
        rows = self._transaction(
            f"reading sample values of {table.qualified}.{column.name}",
            lambda cur: cur.execute(query, (SAMPLE_PREFIX_ROWS, n)).fetchall(),
        )
        texts = (sample_text(r[0]) for r in rows)
        return tuple(dict.fromkeys(text for text in texts if text is not None))


def _short(sql_text: str) -> str:
    text = " ".join(sql_text.split())
    return text if len(text) <= 120 else text[:117] + "..."


# What a views-only role may read beyond the views (plain or materialized) of its schemas:
# base and foreign tables anywhere, any relation outside the declared schemas.
_READABLE_BEYOND_VIEWS = """
SELECT n.nspname, c.relname, CASE WHEN c.relkind IN ('v', 'm') THEN 'view' ELSE 'table' END
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%%'
  AND (c.relkind NOT IN ('v', 'm') OR NOT n.nspname = ANY(%s))
  AND has_schema_privilege(n.oid, 'USAGE') AND has_any_column_privilege(c.oid, 'SELECT')
ORDER BY 1, 2
LIMIT 5
"""

_RELATIONS = """
SELECT c.oid, n.nspname, c.relname, c.relkind IN ('v', 'm'),
       coalesce(obj_description(c.oid, 'pg_class'), '')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = ANY(%s) AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition
  AND has_any_column_privilege(c.oid, 'SELECT')
ORDER BY n.nspname, c.relname
"""
_COLUMNS = """
SELECT a.attrelid, a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull,
       coalesce(col_description(a.attrelid, a.attnum), '')
FROM pg_attribute a
WHERE a.attrelid = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped
  AND has_column_privilege(a.attrelid, a.attnum, 'SELECT')
ORDER BY a.attrelid, a.attnum
"""
# Primary and foreign keys, their columns in key order.
_KEYS = """
SELECT k.conrelid, k.conname, k.contype, rn.nspname, r.relname,
       array(SELECT a.attname FROM unnest(k.conkey) WITH ORDINALITY u(num, i)
             JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.num ORDER BY u.i),
       array(SELECT a.attname FROM unnest(k.confkey) WITH ORDINALITY u(num, i)
             JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.num ORDER BY u.i)
FROM pg_constraint k
LEFT JOIN pg_class r ON r.oid = k.confrelid
LEFT JOIN pg_namespace rn ON rn.oid = r.relnamespace
WHERE k.conrelid = ANY(%s) AND k.contype IN ('p', 'f')
ORDER BY k.conrelid, k.contype, k.conname
"""


def _read_catalog(cur: Cursor, schemas: list[str]) -> list[TableInfo]:
    relations = cur.execute(_RELATIONS, (schemas,)).fetchall()
    oids = [r[0] for r in relations]
    columns: dict[object, list[ColumnInfo]] = {}
    for relid, name, col_type, nullable, comment in cur.execute(_COLUMNS, (oids,)):
        columns.setdefault(relid, []).append(
            ColumnInfo(
                name=str(name), type=str(col_type), nullable=bool(nullable), comment=str(comment)
            )
        )
    primary: dict[object, tuple[str, ...]] = {}
    foreign: dict[object, list[ForeignKey]] = {}
    for relid, _name, kind, ref_schema, ref_table, cols, ref_cols in cur.execute(_KEYS, (oids,)):
        names = tuple(str(c) for c in _strings(cols))
        if kind == "p":
            primary[relid] = names
        else:
            foreign.setdefault(relid, []).append(
                ForeignKey(
                    columns=names,
                    ref_schema=str(ref_schema),
                    ref_table=str(ref_table),
                    ref_columns=tuple(str(c) for c in _strings(ref_cols)),
                )
            )
    return [
        TableInfo(
            schema=str(schema),
            name=str(name),
            kind="view" if is_view else "table",
            comment=str(comment),
            columns=tuple(columns.get(oid, ())),
            primary_key=primary.get(oid, ()),
            foreign_keys=tuple(foreign.get(oid, ())),
        )
        for oid, schema, name, is_view, comment in relations
    ]


def _strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []
