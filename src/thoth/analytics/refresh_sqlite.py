"""The refresh of a SQLite store: a new file beside the served one, swapped in with os.replace.

A reader that holds the served file open keeps reading it (the old inode) until it reopens;
the AnalyticsStore reopens when the path names another file, so answers come from the old copy
with the old data date until the swap, and from the new one after. Previous copies are hard
links beside the served file (`<file>.prev-<UTC stamp>`); a lock file beside it
(`.<file>.refresh-lock`, flock) keeps a second refresh out."""

from __future__ import annotations

import fcntl
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import IO
from urllib.parse import quote

from thoth.analytics.catalog import Catalog
from thoth.analytics.check import check_catalog
from thoth.analytics.refresh_plan import (
    DATA_DATE_TABLE,
    PlanError,
    ViewPlan,
)
from thoth.analytics.refresh_steps import (
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
    plan_copy,
    queried_data_date,
    refuse_older,
    served_data_date,
    stamp,
)
from thoth.analytics.store import AnalyticsError, AnalyticsStore
from thoth.config import AnalyticsRefreshSettings, AnalyticsSettings
from thoth.database import DatabaseUnavailable, StatementRefused
from thoth.errors import Problem
from thoth.storage import fsync_dir, fsync_path

Columns = dict[str, dict[str, str]]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class SqliteRefresh:
    def __init__(
        self, root: Path, settings: AnalyticsSettings, refresh_cfg: AnalyticsRefreshSettings
    ) -> None:
        self.root = root
        self.settings = settings
        self.cfg = refresh_cfg
        ((self.schema, self.rel),) = settings.files.items()
        self.served = (root / self.rel).resolve()
        self.source = (root / (refresh_cfg.source_file or "")).resolve()

    # -- the refresh ------------------------------------------------------------------------

    def run(self, catalog: Catalog, *, force: bool) -> RefreshReport:
        report = RefreshReport(
            dialect="sqlite", served=self.rel, data_date="", previous_data_date=None, forced=force
        )
        steps = Steps(report)
        with steps.step("lock"):
            lock = self._lock()
        try:
            staging = self.served.with_name(f"{self.served.name}.staging-{stamp()}")
            try:
                self._build(catalog, force, report, steps, staging)
                with steps.step("swap", SWAP_FAILED):
                    self._swap(staging)
            finally:
                staging.unlink(missing_ok=True)
            with steps.step("prune", PRUNE_FAILED):
                report.previous, report.dropped = self._prune("prev")
        finally:
            lock.close()
        return report

    def _build(
        self, catalog: Catalog, force: bool, report: RefreshReport, steps: Steps, staging: Path
    ) -> None:
        source: sqlite3.Connection | None = None
        try:
            with steps.step("source", SOURCE_UNREACHABLE):
                source = self._open_source()
                columns = self._source_columns(source)
                report.data_date = self._source_data_date(source)
            with steps.step("plan", VIEWS_INVALID):
                plan, scrub = plan_copy(self.root, self.cfg, "sqlite", "main", columns, report)
            with steps.step("data_date"):
                report.previous_data_date = self._served_data_date()
                refuse_older(report.data_date, report.previous_data_date, force)
        finally:
            if source is not None:
                source.close()
        with steps.step("copy", COPY_FAILED):
            conn = self._copy(staging, plan, columns, scrub, report)
        try:
            with steps.step("views", VIEWS_INVALID):
                self._views(conn, plan, report.data_date)
        finally:
            conn.close()
        fsync_path(staging)
        with steps.step("grant") as timing:
            timing.detail = "SQLite: no role; the views-only authorizer confines readers"
        with steps.step("check"):
            report.checked = self._check(catalog, staging, report.data_date)

    def _lock(self) -> IO[str]:
        self.served.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.served.with_name(f".{self.served.name}.refresh-lock"), "a+")  # noqa: SIM115
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise RefreshError(
                f"another refresh of {self.rel} is running (it holds "
                f".{self.served.name}.refresh-lock) -> wait for it to end",
                code=REFRESH_RUNNING,
                step="lock",
            ) from None
        return handle

    def _open_source(self) -> sqlite3.Connection:
        what = f"[analytics.refresh] source_file {self.cfg.source_file}"
        if not self.source.is_file():
            raise RefreshError(
                f"{what}: no file at {self.source} -> fix the path (relative to the workspace "
                "root) or put the source there",
                code=SOURCE_UNREACHABLE,
                step="source",
            )
        try:
            conn = sqlite3.connect(f"file:{quote(str(self.source))}?mode=ro", uri=True)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            raise RefreshError(
                f"{what}: cannot read {self.source} as SQLite ({exc}) -> check the file",
                code=SOURCE_UNREACHABLE,
                step="source",
            ) from exc
        return conn

    def _source_columns(self, conn: sqlite3.Connection) -> Columns:
        tables = [
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        return {
            t: {str(r[1]): str(r[2] or "") for r in conn.execute(f"PRAGMA table_info({_q(t)})")}
            for t in tables
        }

    def _source_data_date(self, conn: sqlite3.Connection) -> str:
        query = self.cfg.source_data_date_sql
        if query is None:
            mtime = datetime.fromtimestamp(self.source.stat().st_mtime, UTC)
            return mtime.replace(microsecond=0).isoformat()
        what = f"[analytics.refresh] source_data_date_sql ({query})"
        try:
            cur = conn.execute(query)
            rows = cur.fetchmany(2)
            names = tuple(d[0] for d in cur.description or ())
        except sqlite3.Error as exc:
            raise RefreshError(
                f"{what}: the source refused it ({exc})", code=DATA_DATE_INVALID, step="source"
            ) from exc
        return queried_data_date(names, rows, what)

    def _served_data_date(self) -> str | None:
        """The served copy's data date, read as answers read it; None when there is no served
        copy yet or its date cannot be read (a broken copy is what a refresh repairs)."""
        if not self.served.is_file():
            return None
        return served_data_date(self.settings, self.root)

    def _copy(
        self,
        staging: Path,
        plan: ViewPlan,
        columns: Columns,
        scrub: dict[str, set[str]],
        report: RefreshReport,
    ) -> sqlite3.Connection:
        conn = sqlite3.connect(f"file:{quote(str(staging))}", uri=True, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = DELETE")
            conn.execute("ATTACH DATABASE ? AS src", (f"file:{quote(str(self.source))}?mode=ro",))
            conn.execute("BEGIN")
            for table, cols in plan.tables.items():
                declared = ", ".join(f"{_q(c)} {columns[table][c]}".strip() for c in cols)
                conn.execute(f"CREATE TABLE main.{_q(table)} ({declared})")
                hidden = scrub.get(table, set())
                picks = ", ".join("?" if c in hidden else _q(c) for c in cols)
                marks = [self.cfg.scrub_mark for c in cols if c in hidden]
                cur = conn.execute(
                    f"INSERT INTO main.{_q(table)} ({', '.join(_q(c) for c in cols)}) "
                    f"SELECT {picks} FROM src.{_q(table)}",
                    marks,
                )
                report.tables[table] = cur.rowcount
                report.columns[table] = list(cols)
            conn.execute("COMMIT")
            conn.execute("DETACH DATABASE src")
        except BaseException:
            conn.close()
            raise
        return conn

    def _views(self, conn: sqlite3.Connection, plan: ViewPlan, data_date: str) -> None:
        # The data date first: a view of the file may read it.
        conn.execute("BEGIN")
        conn.execute(
            f"CREATE TABLE {DATA_DATE_TABLE} (data_date TEXT NOT NULL, refreshed_at TEXT NOT "
            "NULL, source TEXT NOT NULL)"
        )
        conn.execute(
            f"INSERT INTO {DATA_DATE_TABLE} VALUES (?, ?, ?)",
            (data_date, datetime.now(UTC).isoformat(), str(self.cfg.source_file)),
        )
        conn.execute(
            f"CREATE VIEW {_q(self.cfg.data_date_view)} AS SELECT data_date FROM {DATA_DATE_TABLE}"
        )
        conn.execute("COMMIT")
        try:
            conn.executescript(plan.sql)
        except sqlite3.Error as exc:
            raise PlanError(f"{self.cfg.views}: SQLite refused it on the copy ({exc})") from exc

    def _check(self, catalog: Catalog, staging: Path, data_date: str) -> list[str]:
        """Every catalog query, and the data date query, on the new file, through the same
        read-only views-only layer answers use."""
        settings = self.settings.model_copy(update={"files": {self.schema: str(staging)}})
        store = AnalyticsStore(settings, self.root)
        try:
            with store.database() as db:
                report = check_catalog(
                    catalog, db, [self.schema], max_enum_values=settings.max_enum_values
                )
            problems = list(report.problems)
            try:
                read = store.data_date()
                if instant(read) != instant(data_date):
                    problems.append(
                        Problem(
                            "thoth.toml",
                            f"data_date_sql reads {read} on the new copy, not the recorded "
                            f"{data_date}",
                            field="analytics.data_date_sql",
                            code="data_date_mismatch",
                            hint=f"read it from {self.schema}.{self.cfg.data_date_view}",
                        )
                    )
            except AnalyticsError as exc:
                problems.append(
                    Problem("thoth.toml", str(exc), field="analytics.data_date_sql", code=exc.code)
                )
        except (DatabaseUnavailable, StatementRefused) as exc:
            raise RefreshError(
                f"the new copy {staging.name} cannot be opened read-only ({exc})",
                code=STORE_UNAVAILABLE,
                step="check",
            ) from exc
        finally:
            store.close()
        if problems:
            raise check_failed(problems, staging.name)
        return list(report.queries)

    def _swap(self, staging: Path) -> None:
        previous = self.served.with_name(f"{self.served.name}.prev-{stamp()}")
        had = self.served.is_file()
        if had:
            os.link(self.served, previous)  # the served copy, kept under a second name
        try:
            os.replace(staging, self.served)  # atomic: a reader opens the old or the new file
        except OSError:
            if had:
                previous.unlink(missing_ok=True)
            raise
        fsync_dir(self.served.parent)

    def _copies(self, kind: str) -> list[Path]:
        """The `kind` copies (prev, undone) beside the served file, the newest first."""
        return sorted(self.served.parent.glob(f"{self.served.name}.{kind}-*"), reverse=True)

    def _prune(self, kind: str) -> tuple[list[str], list[str]]:
        copies = self._copies(kind)
        kept, dropped = copies[: self.cfg.keep], copies[self.cfg.keep :]
        for path in dropped:
            path.unlink()
        return [p.name for p in kept], [p.name for p in dropped]

    # -- rollback ---------------------------------------------------------------------------

    def rollback(self) -> RollbackReport:
        lock = self._lock()
        try:
            copies = self._copies("prev")
            if not copies:
                raise RefreshError(
                    f"no previous copy of {self.rel} is kept -> nothing to roll back to",
                    code=NO_PREVIOUS,
                    step="swap",
                )
            newest = copies[0]
            aside = self.served.with_name(f"{self.served.name}.undone-{stamp()}")
            if self.served.is_file():
                os.link(self.served, aside)
            os.replace(newest, self.served)
            fsync_dir(self.served.parent)
            self._prune("undone")
        finally:
            lock.close()
        return RollbackReport(
            dialect="sqlite",
            served=self.rel,
            restored=newest.name,
            set_aside=aside.name,
            data_date=self._served_data_date(),
        )
