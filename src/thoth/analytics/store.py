"""The analytics store: catalog queries run read-only, through views only (thoth.database), each
with the data date read first. A store whose data date cannot be read computes nothing (fail
closed): a number without its date cannot be checked."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

from thoth.analytics.catalog import CatalogQuery
from thoth.analytics.datadate import NotADataDate, data_date_of
from thoth.config import AnalyticsSettings
from thoth.database import (
    DatabaseUnavailable,
    ReadOnlyDatabase,
    StatementRefused,
    open_database,
    quote_ident,
)
from thoth.errors import ThothError

T = TypeVar("T")
# The layer names [database] settings; the store is declared under [analytics].
# A column type that records a day (SQLite's declared DATE, DATETIME, TIMESTAMP; PostgreSQL's
# date and timestamps), not an hour alone.
_DATE_TYPE = re.compile(r"\bdate\b|datetime|timestamp", re.IGNORECASE)
_SETTING = re.compile(r"\bdatabase\.(files|url_env|schemas|statement_timeout_seconds)\b")
log = logging.getLogger("thoth.analytics")


class AnalyticsError(ThothError):
    """A numeric answer could not be computed; `code` says why (stable)."""

    code = "analytics_failed"


STORE_UNAVAILABLE = "analytics_store_unavailable"
DATA_DATE_UNREADABLE = "data_date_unreadable"
QUERY_TIMEOUT = "statement_timeout"
QUERY_REFUSED = "query_refused"


@dataclass(frozen=True)
class Computation:
    """What one catalog query computed, and everything needed to check it."""

    query_id: str
    revision: str | None  # the catalog revision the query was read from
    parameters: dict[str, Any]  # as bound, JSON-ready (dates ISO, decimals as text)
    sql: str  # as executed: the reviewed text, its :name parameters bound by the database
    columns: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]
    truncated: bool
    data_date: str
    duration_ms: float = 0.0
    notes: list[str] = field(default_factory=list)

    def provenance(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "catalog_revision": self.revision,
            "parameters": dict(self.parameters),
            "sql": self.sql,
            "row_count": len(self.rows),
            "truncated": self.truncated,
            "data_date": self.data_date,
        }


def as_analytics(exc: DatabaseUnavailable) -> DatabaseUnavailable:
    """The layer's error, naming the [analytics] setting at fault."""
    return DatabaseUnavailable(_SETTING.sub(r"analytics.\1", str(exc)), code=exc.code)


def json_value(value: object) -> Any:
    if isinstance(value, date | datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes>"
    return value


class AnalyticsStore:
    """One lazily opened read-only connection, shared under a lock (an answer service may
    serve several threads); a connection that failed is dropped and opened again next time."""

    def __init__(
        self,
        settings: AnalyticsSettings,
        root: Path,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self._root = root
        self._environ = environ
        self._db: ReadOnlyDatabase | None = None
        self._opened: tuple[tuple[int, int], ...] = ()
        self._lock = threading.Lock()

    @property
    def dialect(self) -> str:
        return self.settings.dialect

    def _files(self) -> tuple[tuple[int, int], ...]:
        """SQLite: which files the store's paths name now (device, inode). `tht analytics
        refresh` replaces a file by another (os.replace): an open connection keeps reading the
        old one, so it is reopened when the path names another file."""
        if self.settings.dialect != "sqlite":
            return ()
        found = []
        for rel in self.settings.files.values():
            try:
                st = (self._root / rel).stat()
            except OSError:
                return ()
            found.append((st.st_dev, st.st_ino))
        return tuple(found)

    def _with_db(self, what: str, work: Callable[[ReadOnlyDatabase], T]) -> T:
        with self._lock:
            try:
                files = self._files()
                if self._db is not None and files != self._opened:
                    self._drop()
                if self._db is None:
                    self._opened = files
                    self._db = open_database(
                        self.settings.store(), self._root, environ=self._environ
                    )
                return work(self._db)
            except DatabaseUnavailable as exc:
                self._drop()
                raise AnalyticsError(
                    f"the analytics store cannot be reached while {what}: {exc}",
                    code=STORE_UNAVAILABLE,
                ) from exc

    def database(self) -> ReadOnlyDatabase:
        """A connection of its own (the caller closes it): `tht analytics check`."""
        try:
            return open_database(self.settings.store(), self._root, environ=self._environ)
        except DatabaseUnavailable as exc:
            raise as_analytics(exc) from exc

    def _drop(self) -> None:
        if self._db is not None:
            try:
                self._db.close()
            finally:
                self._db = None

    def close(self) -> None:
        with self._lock:
            self._drop()

    def data_date(self) -> str:
        """The date the data are current to: `data_date_sql` must return exactly one row with
        one real date or timestamp (thoth.analytics.datadate). Anything else is
        DATA_DATE_UNREADABLE, and no number is served."""
        setting = "analytics.data_date_sql"

        def read(db: ReadOnlyDatabase) -> str:
            try:
                # Two rows at most: a second row is a fault to report, not one to hide.
                result = db.run(self.settings.data_date_sql, limit=2)
            except StatementRefused as exc:
                raise AnalyticsError(
                    f"{setting}: the data date cannot be read ({exc}) -> fix the query or the "
                    "view it reads; without a data date no number is served",
                    code=DATA_DATE_UNREADABLE,
                ) from exc
            try:
                return data_date_of(result)
            except NotADataDate as exc:
                raise AnalyticsError(
                    f"{setting} ({self.settings.data_date_sql}): {exc} -> it must return one "
                    'row with one date or timestamp (docs/analytics.md, "The data date"); '
                    "without it no number is served",
                    code=DATA_DATE_UNREADABLE,
                ) from exc

        return self._with_db("reading the data date", read)

    def execute(
        self, query: CatalogQuery, values: Mapping[str, object], revision: str | None
    ) -> Computation:
        """Run one catalog query with its bound parameters, between two reads of the data date:
        a refresh swapped in between them (the figure from one copy, the date from the other)
        is seen, and the query runs again on the copy now served."""
        for _ in range(3):
            data_date = self.data_date()
            computed = self._execute(query, values, revision, data_date)
            if self.data_date() == data_date:
                return computed
        raise AnalyticsError(
            f"catalog query {query.id}: the store's data date changed during each of 3 runs "
            "(refreshes back to back?) -> ask again",
            code=DATA_DATE_UNREADABLE,
            where=query.id,
        )

    def _execute(
        self,
        query: CatalogQuery,
        values: Mapping[str, object],
        revision: str | None,
        data_date: str,
    ) -> Computation:
        params = {name: self._bindable(v) for name, v in values.items()}

        def run(db: ReadOnlyDatabase) -> Computation:
            try:
                result = db.run(query.sql, limit=self.settings.row_limit, params=params)
            except StatementRefused as exc:
                code = QUERY_TIMEOUT if exc.code == "statement_timeout" else QUERY_REFUSED
                said = _SETTING.sub(r"analytics.\1", str(exc))
                raise AnalyticsError(
                    f"catalog query {query.id}: {said}", code=code, where=query.id
                ) from exc
            return Computation(
                query_id=query.id,
                revision=revision,
                parameters={k: json_value(v) for k, v in values.items()},
                sql=query.sql,
                columns=result.columns,
                rows=result.rows,
                truncated=result.truncated,
                data_date=data_date,
                duration_ms=result.duration_ms,
            )

        return self._with_db(f"running {query.id}", run)

    def enum_values(self, values_from: str) -> list[str]:
        """The distinct values of `schema.view.column` (an enum's allowed values)."""
        schema, view, column = values_from.split(".")
        sql = (
            f"SELECT DISTINCT {quote_ident(column)} FROM {quote_ident(schema)}."
            f"{quote_ident(view)} WHERE {quote_ident(column)} IS NOT NULL ORDER BY 1"
        )

        def read(db: ReadOnlyDatabase) -> list[str]:
            try:
                result = db.run(sql, limit=self.settings.max_enum_values)
            except StatementRefused as exc:
                raise AnalyticsError(
                    f"values_from {values_from}: cannot read the values ({exc.reason})",
                    code=QUERY_REFUSED,
                ) from exc
            if result.truncated:
                log.warning(
                    "values_from %s holds more than %d values: only the first %d are matched "
                    "in questions -> raise [analytics] max_enum_values or read a narrower view",
                    values_from,
                    self.settings.max_enum_values,
                    self.settings.max_enum_values,
                )
            return [str(r[0]) for r in result.rows]

        return self._with_db(f"reading the values of {values_from}", read)

    def schema_names(self) -> dict[str, list[str]]:
        """The store's views (`schema.view`) and their columns' names (no values: names only,
        what any reviewer of the catalog sees). The decision reads a question's word among
        them as one that could change what a query computes."""

        def read(db: ReadOnlyDatabase) -> dict[str, list[str]]:
            snapshot = db.introspect(sample_values=0, may_sample=lambda *_: False)
            # The data date's view is the refresh's bookkeeping, not a source of figures.
            bookkeeping = self.settings.data_date_sql.casefold()
            return {
                f"{t.schema}.{t.name}": [c.name for c in t.columns]
                for t in snapshot.tables
                if t.kind == "view"
                and not re.search(rf"\b{re.escape(t.name.casefold())}\b", bookkeeping)
            }

        return self._with_db("reading the names of the store's views", read)

    def event_columns(self) -> dict[str, list[str]]:
        """Per view (`schema.view`), its columns of a date type, as introspection reads them:
        the events its rows record (an admission's admission and discharge). The decision reads
        a verb naming an event as one that could change what is counted on rows with several."""

        def read(db: ReadOnlyDatabase) -> dict[str, list[str]]:
            snapshot = db.introspect(sample_values=0, may_sample=lambda *_: False)
            return {
                f"{t.schema}.{t.name}": [c.name for c in t.columns if _DATE_TYPE.search(c.type)]
                for t in snapshot.tables
                if t.kind == "view"
            }

        return self._with_db("reading the date columns of the store's views", read)

    def _bindable(self, value: object) -> object:
        # SQLite binds neither dates nor decimals: ISO text and floats compare as the views'
        # columns store them. PostgreSQL binds both natively.
        if self.settings.dialect == "sqlite":
            if isinstance(value, date):
                return value.isoformat()
            if isinstance(value, Decimal):
                return float(value)
        return value
