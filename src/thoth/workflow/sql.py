"""The database in a session's stages: names checked against the schema index, SQL checked,
explained and run read-only, and the run's receipt in the ledger.

- `check_decision` refuses a `table_promoted`/`table_excluded`/`column_promoted` whose name
  the schema snapshot lacks (the closest names as the hint), and a `final_sql_approved` (or a
  `cte_plan_approved` written as SQL) that is not exactly one read-only statement of the
  database's dialect passing `EXPLAIN` on the read-only connection (the database's own
  message as the reason). `decide_checked` records a decision only after that check.
- `run_final_sql` runs the one standing approved final SQL with the row limit and the timeout,
  and records a `sql_run` receipt: the statement's hash, row count, column names, duration
  and the data date, never rows. A statement the database refuses is recorded as a failed
  run with the reason; a database that cannot be reached records nothing (like an
  unavailable Evidence search), and the error says so.

Without `[database]` the session works as before: names are checked by form only and there
is nothing to run.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from typing import Any, Final

from thoth.database import (
    QueryResult,
    ReadOnlyDatabase,
    StatementRefused,
    check_statement,
)
from thoth.database.base import BYTE_LIMIT, MAX_RESULT_BYTES
from thoth.errors import PreconditionError, Problem, ProblemsError, ThothError
from thoth.index.reader import Unreadable
from thoth.runtime import Runtime
from thoth.schema.catalog import SchemaCatalog
from thoth.session.decisions import decide
from thoth.session.ledger import Entry, SqlRunReceipt
from thoth.session.session import Session

NAME_CHECKED: Final = {
    "table_promoted": "table",
    "table_excluded": "table",
    "column_promoted": "column",
}
SQL_CHECKED: Final = frozenset({"final_sql_approved", "cte_plan_approved"})
# A CTE plan may be prose (one CTE per line) or SQL; SQL is checked like the final SQL.
_SQL_START: Final = re.compile(r"^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*(with|select)\b", re.I | re.S)


class DecisionRefused(ProblemsError):
    """A decision names what the database does not have, or SQL it refuses; nothing was
    written."""

    code = "decision_refused"


class SchemaUnreadable(PreconditionError):
    """The schema index could not be read (the reader's stable code, `schema_not_synced` when
    nothing was synced): nothing could be checked, nothing was written."""


def looks_like_sql(text: str) -> bool:
    return bool(_SQL_START.match(text))


def check_decision(
    runtime: Runtime, session: Session, stage: str, type: str, subject: str, detail: str
) -> None:
    """Refuse (DecisionRefused) a decision the database contradicts; DatabaseUnavailable or
    SchemaUnreadable when it cannot be checked. Nothing is ever written here."""
    if runtime.ws.settings.database is None:
        return
    where = f"session {session.id}, stage {stage}"
    if type in NAME_CHECKED:
        catalog = read_catalog(runtime, where)
        problem = (
            catalog.unknown_table(subject)
            if NAME_CHECKED[type] == "table"
            else catalog.unknown_column(subject)
        )
        if problem is not None:
            raise DecisionRefused(
                f"{where}: {type} {subject!r} refused; nothing was written",
                [Problem(where, problem, field="subject", code="unknown_name")],
            )
        return
    if type in SQL_CHECKED and (type == "final_sql_approved" or looks_like_sql(detail)):
        if not detail.strip():
            raise DecisionRefused(
                f"{where}: {type} refused; nothing was written",
                [
                    Problem(
                        where,
                        "the detail holds no SQL",
                        field="detail",
                        hint="put the statement in --detail",
                    )
                ],
            )
        with runtime.database() as db:
            problems = sql_problems(db, detail, where)
        if problems:
            raise DecisionRefused(f"{where}: {type} refused; nothing was written", problems)


def sql_problems(db: ReadOnlyDatabase, sql: str, where: str) -> list[Problem]:
    """Why `sql` may not be approved: not one read-only statement of the dialect, or the
    database's EXPLAIN refuses it. Empty when it may."""
    verdict = check_statement(sql, db.dialect)
    if not verdict.ok:
        return [Problem(where, r.message, field="detail", code=r.code) for r in verdict.reasons]
    try:
        db.explain(sql)
    except StatementRefused as exc:
        return [
            Problem(
                where,
                f"EXPLAIN on the {db.dialect} database refused it: {exc.reason}",
                field="detail",
                hint=str(exc).split(" -> ", 1)[-1],
                code=exc.code,
            )
        ]
    return []


def read_catalog(runtime: Runtime, where: str) -> SchemaCatalog:
    """The active generation's schema catalog, for every command that checks names against
    it (decisions, the driver's prompt, `tht schema show`, `validate --schema`)."""
    reader = runtime.reader()
    try:
        return SchemaCatalog.read(reader)
    except Unreadable as exc:
        raise SchemaUnreadable(
            f"{where}: the schema index cannot be read [{exc.code}]: {exc}; nothing was written",
            code=exc.code,
        ) from exc
    finally:
        reader.close()


def decide_checked(
    runtime: Runtime,
    session: Session,
    stage: str,
    type: str,
    *,
    subject: str,
    detail: str = "",
    rationale: str = "",
    base: int | None = None,
) -> Entry:
    """`decide`, after the database had its say (check_decision)."""
    check_decision(runtime, session, stage, type, subject, detail)
    return decide(
        session, stage, type, subject=subject, detail=detail, rationale=rationale, base=base
    )


# ---------------------------------------------------------------------- running it


@dataclass(frozen=True)
class SqlRun:
    session_id: str
    sql: str
    entry: Entry
    result: QueryResult | None  # None when the run failed
    notes: tuple[str, ...] = field(default=())

    @property
    def receipt(self) -> SqlRunReceipt:
        assert self.entry.run is not None
        return self.entry.run

    def as_dict(self, rows: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ok": self.receipt.status == "succeeded",
            "session": self.session_id,
            "seq": self.entry.seq,
            "sql": self.sql,
            "receipt": self.receipt.model_dump(mode="json"),
            "notes": list(self.notes),
        }
        if rows and self.result is not None:
            out["columns"] = list(self.result.columns)
            out["rows"] = [list(r) for r in self.result.rows]
        return out


class RunFailed(ThothError):
    """The database refused the approved final SQL; the failed run is in the ledger."""

    def __init__(self, run: SqlRun, message: str) -> None:
        super().__init__(message, code=run.receipt.code or "statement_refused")
        self.run = run


def standing_final_sql(session: Session) -> Entry:
    found = [e for e in session.effective() if e.type == "final_sql_approved"]
    if len(found) != 1:
        what = (
            "no final_sql_approved decision stands"
            if not found
            else f"{len(found)} final_sql_approved decisions stand "
            f"({', '.join(f'seq {e.seq}' for e in found)})"
        )
        raise PreconditionError(
            f"session {session.id}: {what}; nothing was run -> approve exactly one final SQL "
            f"(`tht session decide {session.id} --stage final_sql --type final_sql_approved "
            "--subject ... --detail 'SELECT ...'`, retracting the others)"
        )
    return found[0]


def run_final_sql(
    runtime: Runtime, session: Session, limit: int | None = None, *, base: int | None = None
) -> SqlRun:
    """Run the standing approved final SQL read-only and record its receipt (at ledger
    position `base` when given: a ledger that moved meanwhile is a LedgerConflict, nothing
    recorded, and the rows are not returned)."""
    settings = runtime.ws.settings.database
    if settings is None:
        raise PreconditionError(
            f"session {session.id}: no [database] in thoth.toml, so there is nothing to run "
            "the final SQL on -> declare it (docs/database.md)"
        )
    final = standing_final_sql(session)
    sql = final.detail
    row_limit = min(limit or settings.row_limit, settings.row_limit)
    notes: list[str] = []
    fields: dict[str, Any] = {
        "final_sql_seq": final.seq,
        "statement_sha256": hashlib.sha256(sql.encode()).hexdigest(),
        "dialect": settings.dialect,
        "row_limit": row_limit,
    }
    with runtime.database() as db:  # DatabaseUnavailable: nothing recorded
        db.ping()
        data_date = None
        if settings.data_date_sql:
            try:
                dated = db.run(settings.data_date_sql, limit=1)
                data_date = str(dated.rows[0][0]) if dated.rows and dated.rows[0] else None
            except StatementRefused as exc:
                notes.append(
                    f"database.data_date_sql failed ({exc.reason}): the run has no data date "
                    "-> fix data_date_sql in thoth.toml"
                )
        verdict = check_statement(sql, db.dialect)
        started = time.perf_counter()
        try:
            if not verdict.ok:
                raise StatementRefused(
                    verdict.summary(), verdict.summary(), code=verdict.reasons[0].code
                )
            result = db.run(sql, limit=row_limit)
        except StatementRefused as exc:
            entry = session.record_run(
                SqlRunReceipt(
                    **fields,
                    status="failed",
                    duration_ms=round((time.perf_counter() - started) * 1000, 3),
                    data_date=data_date,
                    reason=exc.reason[:2000],
                    code=exc.code,
                ),
                base=base,
            )
            run = SqlRun(session.id, sql, entry, None, tuple(notes))
            raise RunFailed(
                run,
                f"session {session.id}: the final SQL of seq {final.seq} failed [{exc.code}]: "
                f"{exc} (recorded as seq {entry.seq})",
            ) from exc
    entry = session.record_run(
        SqlRunReceipt(
            **fields,
            status="succeeded",
            duration_ms=round(result.duration_ms, 3),
            row_count=len(result.rows),
            truncated=result.truncated,
            columns=result.columns,
            data_date=data_date,
        ),
        base=base,
    )
    if result.truncated_by == BYTE_LIMIT:
        notes.append(
            f"only the first {len(result.rows)} rows are shown: the result passes "
            f"{MAX_RESULT_BYTES:,} bytes -> select fewer or shorter columns, or aggregate"
        )
    elif result.truncated:
        notes.append(
            f"only the first {row_limit} rows are shown: the query returns more -> aggregate "
            "or filter it, or raise database.row_limit"
        )
    return SqlRun(session.id, sql, entry, result, tuple(notes))
