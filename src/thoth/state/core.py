"""The core of the state store: URL, engine, SQLite configuration, transactions, error wording.

Every concern module (generations, runs, answers) builds on `StoreCore`: it runs its
statements through `_write` (one short write transaction) and `_read`, which turn database
failures into a StateError that names the database, the operation and what to do. What to do
depends on the fault: a lock held too long or a lost connection may be retried, a schema that
does not match this Thoth may not (retrying fails the same way), and a refused row is reported.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self, cast

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, SQLAlchemyError

from thoth.config import url_from_environment
from thoth.errors import ConfigError, Problem, ThothError
from thoth.sqlitewal import enable_wal

DEFAULT_SQLITE_PATH: Final = Path(".thoth") / "state.sqlite"

# SQLite: a write transaction takes the write lock at BEGIN (IMMEDIATE), so two writers queue
# on busy_timeout instead of one failing with "database is locked" when it upgrades a read
# snapshot that another writer has already changed.
WRITE_OPTION: Final = "thoth_write"
SQLITE_BUSY_TIMEOUT_MS: Final = 15_000
# PostgreSQL: without a timeout libpq waits for an unreachable host for minutes.
PG_CONNECT_TIMEOUT_S: Final = 10

OPEN_HINT: Final = (
    "check [state].url in thoth.toml (or the URL in the variable [state].url_env names)"
)

# PostgreSQL SQLSTATE classes/codes of faults that go away by themselves: connection
# exceptions (08...), serialization failure, deadlock, lock timeout, server shutting down.
_PG_TRANSIENT: Final = ("08", "40001", "40P01", "55P03", "57P01", "57P02", "57P03")
# ...and of a schema that does not match: undefined table/column, wrong type.
_PG_SCHEMA: Final = ("42P01", "42703", "42804")
_SQLITE_TRANSIENT: Final = ("database is locked", "database table is locked", "busy")
_SQLITE_SCHEMA: Final = ("no such table", "no such column", "has no column named")

SCHEMA_ADVICE: Final = (
    "the tables do not have the shape this Thoth expects (retrying fails the same way): "
    "check that no other Thoth version and no manual change altered the database (its "
    "schema revision is in table alembic_version), then reopen it with this Thoth, which "
    "upgrades it"
)


class StateError(ThothError):
    """A state-store operation failed; the message names the database, table/id and the fix."""


def state_url(workspace_root: Path, configured: str | None, url_env: str | None = None) -> str:
    """The URL to open: `[state].url`, or the value of the environment variable
    `[state].url_env` names, else SQLite in `<workspace>/.thoth/`.

    A `url_env` whose variable is unset or empty is an error, never SQLite: a deployment that
    forgot to export it would otherwise record its publications in a file nobody else reads.
    A configured SQLite file must be in a directory that exists: opening it would otherwise
    create an empty database wherever a typo points (and serve nothing of what was published),
    so the directory is never created for it. The default one, under `.thoth/`, is Thoth's."""
    if url_env:
        configured = url_from_environment(
            "state",
            url_env,
            "the state store's URL, postgresql+psycopg://user:password@host:5432/db",
        )
    if configured:
        _check_sqlite_directory(configured)
        return configured
    return f"sqlite:///{(workspace_root / DEFAULT_SQLITE_PATH).resolve()}"


def _check_sqlite_directory(url: str) -> None:
    try:
        parsed = make_url(url)
    except ArgumentError:
        return  # not a URL: create_state_engine says so, naming it
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return
    if database.startswith("file:"):
        return  # a URI filename: SQLite resolves it
    directory = Path(database).parent.absolute()  # relative: to the working directory
    if directory.is_dir():
        return
    what = "is not a directory" if directory.exists() else "does not exist"
    message = f"the directory of the state database, {directory}, {what}"
    hint = (
        f"create the directory (mkdir -p {directory}) if the database belongs there, or fix "
        "[state].url in thoth.toml; Thoth never creates it, so a typo cannot start an empty "
        "state database"
    )
    raise ConfigError(
        f"[state].url {redact_url(url)}: {message}",
        code="state_directory_missing",
        problems=[
            Problem(
                "thoth.toml",
                message,
                field="state.url",
                hint=hint,
                code="state_directory_missing",
            )
        ],
    )


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite state URL; None for PostgreSQL, memory or an unparseable URL."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return None
    if database.startswith("file:"):
        return None
    return Path(database)


def redact_url(url: str) -> str:
    """The URL fit for messages and logs: the password replaced by ***."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        # Not parseable by SQLAlchemy, but it may still carry user:password@.
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


def create_state_engine(url: str) -> Engine:
    """An engine for `url` (SQLite file or PostgreSQL), configured; no connection made yet."""
    shown = redact_url(url)
    try:
        sa_url = make_url(url)
    except ArgumentError as exc:
        raise StateError(
            f"cannot open state store {shown}: not a database URL ({exc}) -> {OPEN_HINT}"
            " (sqlite:///path/state.sqlite or postgresql+psycopg://user@host/db)"
        ) from exc
    backend = sa_url.get_backend_name()
    kwargs: dict[str, Any] = {}
    if backend == "sqlite":
        database = sa_url.database or ""
        if database in ("", ":memory:") or database.startswith("file::memory:"):
            raise StateError(
                f"cannot open state store {shown}: an in-memory SQLite database would be "
                f"lost when the process exits -> {OPEN_HINT} with a file path"
            )
        try:
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateError(
                f"cannot open state store {shown}: cannot create the directory of "
                f"{database} ({exc}) -> {OPEN_HINT} or fix the permissions"
            ) from exc
    elif backend == "postgresql":
        if "connect_timeout" not in sa_url.query:
            kwargs["connect_args"] = {"connect_timeout": PG_CONNECT_TIMEOUT_S}
    else:
        raise StateError(
            f"cannot open state store {shown}: backend {backend!r} is not supported"
            f" -> {OPEN_HINT}: use sqlite:///... or postgresql+psycopg://..."
        )
    try:
        engine = create_engine(sa_url, **kwargs)
    except (ArgumentError, ImportError) as exc:
        raise StateError(
            f"cannot open state store {shown}: {exc} -> {OPEN_HINT}"
            " (the PostgreSQL driver is psycopg: postgresql+psycopg://...)"
        ) from exc
    if backend == "sqlite":
        _configure_sqlite(engine)
    return engine


def _configure_sqlite(engine: Engine) -> None:
    # Looked up when the engine is created (not bound at import): a test can shorten it.
    busy_ms = SQLITE_BUSY_TIMEOUT_MS

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # The sqlite3 module's own implicit BEGIN is skipped for SELECT; SQLAlchemy emits
        # BEGIN itself (below) so reads are repeatable and writes take the lock up front.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        try:
            # busy_timeout first: switching to WAL needs a lock another opener may hold.
            cursor.execute(f"PRAGMA busy_timeout = {busy_ms}")
            enable_wal(cursor, busy_ms / 1000)
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get(WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


class StoreCore:
    """The handle every concern module shares: engine, redacted URL, transactions."""

    def __init__(self, engine: Engine, url: str, file: Path | None = None) -> None:
        self._engine = engine
        self._writer = engine.execution_options(**{WRITE_OPTION: True})
        self.url = url  # redacted: safe to print
        self.file = file  # the SQLite file; None on PostgreSQL

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    @contextmanager
    def _write(self, what: str) -> Iterator[Connection]:
        """One write transaction; database failures become a StateError naming `what`."""
        try:
            with self._writer.begin() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise self._failed(what, exc, written=True) from exc

    @contextmanager
    def _read(self, what: str) -> Iterator[Connection]:
        try:
            with self._engine.connect() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise self._failed(what, exc, written=False) from exc

    def _failed(self, what: str, exc: SQLAlchemyError, *, written: bool) -> StateError:
        return StateError(
            f"state store {self.url}: {what} failed: {reason(exc)} -> "
            f"{advice(exc, written=written)}"
        )


def reason(exc: SQLAlchemyError) -> str:
    """The driver's own message, first line only (SQLAlchemy appends SQL and a help link)."""
    prefix = "constraint violated: " if isinstance(exc, IntegrityError) else ""
    source: BaseException = exc.orig if isinstance(exc, DBAPIError) and exc.orig else exc
    lines = [line.strip() for line in str(source).strip().splitlines() if line.strip()]
    return prefix + (lines[0] if lines else type(source).__name__)


def fault_kind(exc: SQLAlchemyError) -> str:
    """'transient' (may succeed if retried), 'schema', 'constraint' or 'other'."""
    if isinstance(exc, IntegrityError):
        return "constraint"
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return "transient"
        sqlstate = getattr(exc.orig, "sqlstate", None)
        if isinstance(sqlstate, str):
            if sqlstate.startswith(_PG_TRANSIENT):
                return "transient"
            if sqlstate in _PG_SCHEMA:
                return "schema"
            return "other"
        message = str(exc.orig).lower()
        if any(marker in message for marker in _SQLITE_TRANSIENT):
            return "transient"
        if any(marker in message for marker in _SQLITE_SCHEMA):
            return "schema"
    return "other"


def advice(exc: SQLAlchemyError, *, written: bool) -> str:
    """What to do about a failed statement; only a transient fault is worth retrying."""
    kind = fault_kind(exc)
    if kind == "transient":
        return (
            "the database was busy or the connection was lost: retry; if it keeps failing, "
            "check that the database is reachable and which process holds it"
        )
    if kind == "schema":
        return SCHEMA_ADVICE
    if kind == "constraint":
        return (
            "the database refused the row, nothing was written: the constraint named above "
            "says why; report it with this message"
        )
    done = "nothing was written" if written else "nothing was changed"
    return f"{done}; check the database (disk space, permissions, the server log)"


def require(name: str, value: str) -> None:
    if not value or not value.strip():
        raise StateError(f"state store: {name} is empty -> pass a non-empty {name}")


def now() -> datetime:
    return datetime.now(UTC)


def ts(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def parse_ts(stored: str) -> datetime:
    return datetime.fromisoformat(stored)


def dump_json(what: str, value: dict[str, Any]) -> str:
    if not isinstance(value, dict):
        raise StateError(f"{what} must be a dict, got {type(value).__name__}")
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StateError(
            f"{what} cannot be stored as JSON ({exc}) -> pass only str, int, float, bool, "
            "None, list and dict values"
        ) from exc


def load_json(stored: str) -> dict[str, Any]:
    return cast(dict[str, Any], json.loads(stored))
