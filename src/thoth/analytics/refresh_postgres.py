"""The refresh of a PostgreSQL store: a staging schema per refresh, swapped in by renaming
schemas in one transaction.

Everything happens in one transaction of the administrator's connection: the staging schema,
its tables (COPY streamed from the source, read in one REPEATABLE READ snapshot), the views,
the data date; then, still uncommitted, the served schema renamed to `<schema>_prev_<stamp>`
(its USAGE revoked from the store's role), the staging schema renamed to the served name, the
role granted its views, and every catalog query run as that role (SET ROLE, read-only, with
the statement timeout) through the same layer answers use. COMMIT is the swap: readers see the
old schema until then (PostgreSQL's MVCC catalog), the new one after; any failure is a
ROLLBACK, and the served schema never changed. A session advisory lock keeps a second refresh
out. A pg_dump backup is first restored into a scratch database, dropped afterwards: a
custom-format one by pg_restore, a plain one by psql in one transaction (refused when pg_dump's
closing line is missing: cut short)."""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from thoth.analytics.catalog import Catalog
from thoth.analytics.check import check_catalog
from thoth.analytics.datadate import NotADataDate, data_date_of
from thoth.analytics.grants import schema_grants
from thoth.analytics.refresh_plan import (
    DATA_DATE_TABLE,
    ViewPlan,
)
from thoth.analytics.refresh_steps import (
    BACKUP_UNREADABLE,
    COPY_FAILED,
    DATA_DATE_INVALID,
    NO_PREVIOUS,
    PRUNE_FAILED,
    REFRESH_RUNNING,
    SOURCE_UNREACHABLE,
    STORE_UNAVAILABLE,
    SWAP_FAILED,
    VIEWS_INVALID,
    RefreshError,
    RefreshReport,
    RollbackReport,
    Steps,
    check_failed,
    instant,
    iso_data_date,
    plan_copy,
    queried_data_date,
    refuse_older,
    served_data_date,
    stamp,
)
from thoth.config import AnalyticsRefreshSettings, AnalyticsSettings
from thoth.database import DatabaseUnavailable, StatementRefused
from thoth.database.postgres import Cursor, PostgresDatabase
from thoth.errors import Problem

T = TypeVar("T")
Conn = psycopg.Connection[tuple[object, ...]]
Columns = dict[str, dict[str, str]]
_COPY_CHUNK = 1 << 20
_RESTORE_TIMEOUT_S = 3600

_SOURCE_COLUMNS = """
SELECT c.relname, a.attname,
       CASE WHEN tn.nspname = 'pg_catalog' THEN format_type(a.atttypid, a.atttypmod)
            ELSE 'text' END
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type t ON t.oid = a.atttypid
JOIN pg_namespace tn ON tn.oid = t.typnamespace
WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
ORDER BY c.relname, a.attnum
"""


def _libpq(url: str) -> str:
    for prefix in ("postgresql+psycopg://", "postgresql+psycopg2://", "postgres+psycopg://"):
        if url.startswith(prefix):
            return "postgresql://" + url.removeprefix(prefix)
    return url


class PostgresRefresh:
    def __init__(
        self,
        root: Path,
        settings: AnalyticsSettings,
        refresh_cfg: AnalyticsRefreshSettings,
        environ: Mapping[str, str] | None,
    ) -> None:
        self.root = root
        self.settings = settings
        self.cfg = refresh_cfg
        self.environ = os.environ if environ is None else environ
        self.schema = settings.schemas[0]
        self.base = self.schema[:40]
        self.lock_key = f"thoth-analytics-refresh:{self.schema}"

    # -- connections ------------------------------------------------------------------------

    def _url(self, var: str, setting: str, code: str, step: str) -> str:
        url = self.environ.get(var, "").strip()
        if not url:
            raise RefreshError(
                f"{setting}: the environment variable {var} is not set -> export "
                f"{var}=postgresql://<role>:<password>@<host>:<port>/<database>",
                code=code,
                step=step,
            )
        return _libpq(url)

    def _connect(self, url: str, what: str, code: str, step: str) -> Conn:
        try:
            return psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            detail = " ".join(str(exc).split())
            password = str(conninfo_to_dict(url).get("password") or "")
            if password:
                detail = detail.replace(password, "***")
            raise RefreshError(
                f"cannot connect to {what}: {detail} -> check that the server runs and the URL",
                code=code,
                step=step,
            ) from None

    def _admin(self, step: str) -> Conn:
        var = self.cfg.admin_url_env or ""
        url = self._url(var, "[analytics.refresh] admin_url_env", STORE_UNAVAILABLE, step)
        return self._connect(url, f"the store's database ({var})", STORE_UNAVAILABLE, step)

    def _lock(self, admin: Conn) -> None:
        row = admin.execute(
            "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (self.lock_key,)
        ).fetchone()
        if not (row and row[0]):
            raise RefreshError(
                f"another refresh of schema {self.schema} is running (it holds the advisory "
                f"lock {self.lock_key!r}) -> wait for it to end",
                code=REFRESH_RUNNING,
                step="lock",
            )

    def _reader_role(self) -> str:
        var = self.settings.url_env or ""
        url = self._url(var, "analytics.url_env", STORE_UNAVAILABLE, "grant")
        role = conninfo_to_dict(url).get("user")
        if not role:
            raise RefreshError(
                f"analytics.url_env ({var}): the URL names no role -> name the store's "
                "read-only role in it",
                code=STORE_UNAVAILABLE,
                step="grant",
            )
        return str(role)

    # -- the refresh ------------------------------------------------------------------------

    def run(self, catalog: Catalog, *, force: bool) -> RefreshReport:
        report = RefreshReport(
            dialect="postgresql",
            served=self.schema,
            data_date="",
            previous_data_date=None,
            forced=force,
        )
        steps = Steps(report, (psycopg.Error,))
        with steps.step("lock", STORE_UNAVAILABLE):
            admin = self._admin("lock")
            try:
                self._lock(admin)
            except BaseException:
                admin.close()
                raise
        scratch: str | None = None
        try:
            source: Conn | None = None
            try:
                with steps.step("source", SOURCE_UNREACHABLE):
                    if self.cfg.source_backup:
                        scratch, url = self._restore(admin)
                    else:
                        var = self.cfg.source_url_env or ""
                        url = self._url(
                            var, "[analytics.refresh] source_url_env", SOURCE_UNREACHABLE, "source"
                        )
                    source = self._connect(
                        url, f"the source database ({scratch or self.cfg.source_url_env})",
                        SOURCE_UNREACHABLE, "source",
                    )  # fmt: skip
                    # One snapshot for every table and the data date.
                    source.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    columns = self._source_columns(source)
                    report.data_date = self._source_data_date(source)
                with steps.step("plan", VIEWS_INVALID):
                    plan, scrub = plan_copy(
                        self.root, self.cfg, "postgresql", self.cfg.source_schema, columns, report
                    )
                with steps.step("data_date"):
                    report.previous_data_date = self._served_data_date(admin)
                    refuse_older(report.data_date, report.previous_data_date, force)
                self._build_and_swap(admin, source, plan, columns, scrub, catalog, report, steps)
            finally:
                if source is not None:
                    source.close()
            with steps.step("prune", PRUNE_FAILED):
                report.previous, report.dropped = self._prune(admin, "prev")
        finally:
            try:
                if scratch is not None:
                    admin.execute(
                        sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                            sql.Identifier(scratch)
                        )
                    )
            finally:
                admin.close()  # ends the session: its advisory lock with it
        return report

    def _build_and_swap(
        self,
        admin: Conn,
        source: Conn,
        plan: ViewPlan,
        columns: Columns,
        scrub: dict[str, set[str]],
        catalog: Catalog,
        report: RefreshReport,
        steps: Steps,
    ) -> None:
        staging = f"{self.base}_staging_{secrets.token_hex(4)}"
        admin.execute("BEGIN")
        try:
            with steps.step("copy", COPY_FAILED):
                self._copy(admin, source, staging, plan, columns, scrub, report)
                source.execute("COMMIT")
            with steps.step("views", VIEWS_INVALID):
                self._views(admin, staging, plan, report.data_date)
            with steps.step("grant", STORE_UNAVAILABLE) as timing:
                role = self._reader_role()
                previous = self._rename_in(admin, staging)
                timing.detail = f"role {role}; the served copy renamed {previous or '(none)'}"
                admin.execute("\n".join(schema_grants(role, self.schema)))
            with steps.step("check"):
                report.checked = self._check(admin, role, catalog, report.data_date)
            with steps.step("swap", SWAP_FAILED):
                admin.execute("COMMIT")
        except BaseException:
            if (
                not admin.closed
                and not admin.broken
                and admin.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
            ):
                admin.execute("ROLLBACK")
            raise

    def _restore(self, admin: Conn) -> tuple[str, str]:
        """The backup restored into a scratch database; its name and URL."""
        path = (self.root / (self.cfg.source_backup or "")).resolve()
        what = f"[analytics.refresh] source_backup {self.cfg.source_backup}"
        if not path.is_file():
            raise RefreshError(
                f"{what}: no file at {path} -> fix the path (relative to the workspace root)",
                code=SOURCE_UNREACHABLE,
                step="source",
            )
        _restore_command(path, "", what)  # a plain dump cut short is refused before anything
        scratch = f"thoth_refresh_src_{secrets.token_hex(4)}"
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(scratch)))
        try:
            admin_url = self._url(
                self.cfg.admin_url_env or "",
                "[analytics.refresh] admin_url_env",
                STORE_UNAVAILABLE,
                "source",
            )
            params = conninfo_to_dict(admin_url)
            password = str(params.pop("password", "") or "")
            params["dbname"] = scratch
            target = make_conninfo("", **params)
            env = dict(os.environ) | ({"PGPASSWORD": password} if password else {})
            program, command = _restore_command(path, target, what)
            try:
                done = subprocess.run(
                    command, capture_output=True, text=True, env=env,
                    timeout=_RESTORE_TIMEOUT_S, check=False,
                )  # fmt: skip
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise RefreshError(
                    f"{what}: {program} could not run ({exc}) -> install the PostgreSQL client "
                    "tools of the server's version",
                    code=BACKUP_UNREADABLE,
                    step="source",
                ) from exc
            if done.returncode != 0:
                said = " ".join(done.stderr.split())[-400:] or f"exit {done.returncode}"
                raise RefreshError(
                    f"{what}: {program} refused it ({said}) -> a truncated or damaged backup, "
                    "or not a pg_dump file (custom -Fc, or plain SQL)",
                    code=BACKUP_UNREADABLE,
                    step="source",
                )
        except BaseException:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(scratch))
            )
            raise
        return scratch, make_conninfo(target, password=password) if password else target

    def _source_columns(self, source: Conn) -> Columns:
        found: Columns = {}
        for table, column, col_type in source.execute(_SOURCE_COLUMNS, (self.cfg.source_schema,)):
            found.setdefault(str(table), {})[str(column)] = str(col_type)
        if not found:
            raise RefreshError(
                f"[analytics.refresh] source_schema {self.cfg.source_schema}: the source shows "
                "no table there -> fix the schema, or grant the source role USAGE and SELECT",
                code=SOURCE_UNREACHABLE,
                step="source",
            )
        return found

    def _source_data_date(self, source: Conn) -> str:
        query = self.cfg.source_data_date_sql
        if query is None:
            if self.cfg.source_backup:
                mtime = (self.root / self.cfg.source_backup).stat().st_mtime
                return datetime.fromtimestamp(mtime, UTC).replace(microsecond=0).isoformat()
            row = source.execute("SELECT now()").fetchone()
            return iso_data_date(row[0] if row else None, "the source's clock")
        what = f"[analytics.refresh] source_data_date_sql ({query})"
        try:
            with source.cursor() as cur:
                cur.execute("SAVEPOINT thoth_date")
                cur.execute(query.encode())  # the reviewed settings' text
                rows = cur.fetchmany(2)
                names = tuple(d.name for d in cur.description or ())
                cur.execute("RELEASE SAVEPOINT thoth_date")
        except psycopg.Error as exc:
            raise RefreshError(
                f"{what}: the source refused it ({' '.join(str(exc).split())})",
                code=DATA_DATE_INVALID,
                step="source",
            ) from exc
        return queried_data_date(names, rows, what)

    def _exists(self, admin: Conn, schema: str) -> bool:
        row = admin.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
        return row is not None

    def _served_data_date(self, admin: Conn) -> str | None:
        if not self._exists(admin, self.schema):
            return None
        return served_data_date(self.settings, self.root, self.environ)

    def _copy(
        self,
        admin: Conn,
        source: Conn,
        staging: str,
        plan: ViewPlan,
        columns: Columns,
        scrub: dict[str, set[str]],
        report: RefreshReport,
    ) -> None:
        ident = sql.Identifier
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(ident(staging)))
        mark = self.cfg.scrub_mark
        for table, cols in plan.tables.items():
            hidden = scrub.get(table, set())
            types = {
                c: ("text" if c in hidden and mark is not None else columns[table][c]) for c in cols
            }
            admin.execute(
                sql.SQL("CREATE TABLE {}.{} ({})").format(
                    ident(staging),
                    ident(table),
                    sql.SQL(", ").join(
                        sql.SQL("{} {}").format(ident(c), sql.SQL(types[c])) for c in cols
                    ),
                )
            )
            picks = sql.SQL(", ").join(
                (sql.Literal(mark) if mark is not None else sql.SQL("NULL"))
                if c in hidden
                else sql.SQL("{}::{}").format(ident(c), sql.SQL(types[c]))
                for c in cols
            )
            out = sql.SQL("COPY (SELECT {} FROM {}.{}) TO STDOUT").format(
                picks, ident(self.cfg.source_schema), ident(table)
            )
            into = sql.SQL("COPY {}.{} ({}) FROM STDIN").format(
                ident(staging), ident(table), sql.SQL(", ").join(map(ident, cols))
            )
            with source.cursor() as src, admin.cursor() as dst:
                with src.copy(out) as reading, dst.copy(into) as writing:
                    for chunk in reading:
                        writing.write(chunk)
                report.tables[table] = dst.rowcount
            admin.execute(sql.SQL("ANALYZE {}.{}").format(ident(staging), ident(table)))
            report.columns[table] = list(cols)

    def _views(self, admin: Conn, staging: str, plan: ViewPlan, data_date: str) -> None:
        ident = sql.Identifier
        admin.execute(
            sql.SQL(
                "CREATE TABLE {s}.{t} (data_date text NOT NULL, refreshed_at timestamptz NOT NULL "
                "DEFAULT now(), source text NOT NULL)"
            ).format(s=ident(staging), t=ident(DATA_DATE_TABLE))
        )
        admin.execute(
            sql.SQL("INSERT INTO {}.{} (data_date, source) VALUES (%s, %s)").format(
                ident(staging), ident(DATA_DATE_TABLE)
            ),
            (data_date, self.cfg.source_url_env or self.cfg.source_backup or ""),
        )
        admin.execute(
            sql.SQL("CREATE VIEW {s}.{v} AS SELECT data_date FROM {s}.{t}").format(
                s=ident(staging), v=ident(self.cfg.data_date_view), t=ident(DATA_DATE_TABLE)
            )
        )
        # The file as written, its unqualified names resolved in the staging schema only.
        admin.execute(sql.SQL("SET LOCAL search_path TO {}").format(ident(staging)))
        try:
            with admin.cursor() as cur:
                cur.execute("SAVEPOINT thoth_views")
                try:
                    cur.execute(plan.sql.encode())
                except psycopg.Error as exc:
                    cur.execute("ROLLBACK TO SAVEPOINT thoth_views")
                    raise RefreshError(
                        f"{self.cfg.views}: PostgreSQL refused it on the copy "
                        f"({' '.join(str(exc).split())})",
                        code=VIEWS_INVALID,
                        step="views",
                    ) from exc
        finally:
            admin.execute("SET LOCAL search_path TO DEFAULT")

    def _rename_in(self, admin: Conn, staging: str) -> str | None:
        """Inside the open transaction: the served schema set aside (the store's role loses
        USAGE on it, so it sees one copy only), the staging schema given the served name."""
        ident = sql.Identifier
        previous = None
        if self._exists(admin, self.schema):
            previous = f"{self.base}_prev_{stamp()}"
            admin.execute(
                sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(ident(self.schema), ident(previous))
            )
            admin.execute(
                sql.SQL("REVOKE USAGE ON SCHEMA {} FROM {}").format(
                    ident(previous), ident(self._reader_role())
                )
            )
        admin.execute(
            sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(ident(staging), ident(self.schema))
        )
        return previous

    def _check(self, admin: Conn, role: str, catalog: Catalog, data_date: str) -> list[str]:
        """Every catalog query and the data date query on the new copy, under its served name,
        as the store's role, before anyone else can see it."""
        try:
            db = _Uncommitted(self.settings, admin, role)
        except DatabaseUnavailable as exc:
            raise RefreshError(
                f"the store's role {role} on the new copy: {exc}",
                code=STORE_UNAVAILABLE,
                step="check",
            ) from exc
        report = check_catalog(
            catalog, db, [self.schema], max_enum_values=self.settings.max_enum_values
        )
        problems = list(report.problems)
        setting = "analytics.data_date_sql"
        try:
            read = data_date_of(db.run(self.settings.data_date_sql, limit=2))
            if instant(read) != instant(data_date):
                problems.append(
                    Problem(
                        "thoth.toml",
                        f"it reads {read} on the new copy, not the recorded {data_date}",
                        field=setting,
                        code="data_date_mismatch",
                        hint=f"read it from {self.schema}.{self.cfg.data_date_view}",
                    )
                )
        except (StatementRefused, NotADataDate) as exc:
            problems.append(Problem("thoth.toml", str(exc), field=setting, code=exc.code))
        if problems:
            raise check_failed(problems, f"(schema {self.schema}, uncommitted)")
        return list(report.queries)

    def _copies(self, admin: Conn, kind: str) -> list[str]:
        """The `kind` copies (prev, undone) of the served schema, the newest first."""
        return [
            str(r[0])
            for r in admin.execute(
                "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s ORDER BY nspname DESC",
                (f"{self.base}\\_{kind}\\_%",),
            )
        ]

    def _prune(self, admin: Conn, kind: str) -> tuple[list[str], list[str]]:
        names = self._copies(admin, kind)
        kept, dropped = names[: self.cfg.keep], names[self.cfg.keep :]
        for name in dropped:
            admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))
        return kept, dropped

    # -- rollback ---------------------------------------------------------------------------

    def rollback(self) -> RollbackReport:
        admin = self._admin("lock")
        try:
            self._lock(admin)
            kept = self._copies(admin, "prev")
            if not kept:
                raise RefreshError(
                    f"no previous copy of schema {self.schema} is kept -> nothing to roll back to",
                    code=NO_PREVIOUS,
                    step="swap",
                )
            newest, aside = kept[0], f"{self.base}_undone_{stamp()}"
            role = self._reader_role()
            ident = sql.Identifier
            with admin.transaction():
                if self._exists(admin, self.schema):
                    admin.execute(
                        sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(
                            ident(self.schema), ident(aside)
                        )
                    )
                    admin.execute(
                        sql.SQL("REVOKE USAGE ON SCHEMA {} FROM {}").format(
                            ident(aside), ident(role)
                        )
                    )
                admin.execute(
                    sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(
                        ident(newest), ident(self.schema)
                    )
                )
                admin.execute("\n".join(schema_grants(role, self.schema)))
            self._prune(admin, "undone")
        except psycopg.Error as exc:
            raise RefreshError(
                f"PostgreSQL refused the rollback ({' '.join(str(exc).split())})",
                code=SWAP_FAILED,
                step="swap",
            ) from exc
        finally:
            admin.close()
        return RollbackReport(
            dialect="postgresql",
            served=self.schema,
            restored=newest,
            set_aside=aside,
            data_date=served_data_date(self.settings, self.root, self.environ),
        )


# pg_dump's plain format ends with this line: a dump without it was cut short.
_PLAIN_END = b"-- PostgreSQL database dump complete"


def _restore_command(path: Path, target: str, what: str) -> tuple[str, list[str]]:
    """pg_restore for a custom-format backup (`PGDMP` header: it checks its own table of
    contents), psql in one transaction stopping at the first error for a plain one, which
    must end with pg_dump's closing line."""
    with path.open("rb") as handle:
        head = handle.read(5)
        handle.seek(max(0, path.stat().st_size - 4096))
        tail = handle.read()
    if head == b"PGDMP":
        return "pg_restore", [
            "pg_restore", "--no-owner", "--no-privileges", "--exit-on-error",
            "--dbname", target, str(path),
        ]  # fmt: skip
    if _PLAIN_END not in tail:
        raise RefreshError(
            f"{what}: neither a pg_dump custom-format file nor a complete plain dump (its "
            f"closing line {_PLAIN_END.decode()!r} is missing: cut short?) -> take the backup "
            "again",
            code=BACKUP_UNREADABLE,
            step="source",
        )
    return "psql", [
        "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction",
        "--dbname", target, "--file", str(path),
    ]  # fmt: skip


class _Uncommitted(PostgresDatabase):
    """The read-only layer over the refresh's own open transaction: each statement in a
    savepoint, as the store's role (SET LOCAL ROLE), read-only and under the statement timeout,
    always rolled back to the savepoint. The role and views-only checks of the layer run too,
    so a new copy the role could read beyond its views is refused before anyone sees it."""

    def __init__(self, settings: AnalyticsSettings, conn: Conn, role: str) -> None:
        store = settings.store()
        self._settings = store
        self._timeout_ms = max(1, round(store.statement_timeout_seconds * 1000))
        self._setting = f"the new copy (as role {role})"
        self._conninfo = self._password = ""
        self._target = f"{role} on the new copy"
        self._conn = conn
        self._role = role
        self._check_role()
        self._check_views_only()

    def _transaction(self, what: str, work: Callable[[Cursor], T]) -> T:
        conn = self._connection()
        try:
            with conn.cursor() as cur:
                cur.execute("SAVEPOINT thoth_check")
                try:
                    cur.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(self._role)))
                    cur.execute(
                        "SELECT set_config('statement_timeout', %s, true), "
                        "set_config('transaction_read_only', 'on', true)",
                        (f"{self._timeout_ms}ms",),
                    )
                    return work(cur)
                finally:
                    cur.execute("ROLLBACK TO SAVEPOINT thoth_check")
        except psycopg.Error as exc:
            raise self._refusal(what, exc) from exc

    def close(self) -> None:
        """The connection is the refresh's: it is not closed here."""
