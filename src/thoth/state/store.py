"""The relational state store: which revision and index generation a workspace serves.

It records what Thoth publishes (revision activations, index generations, build runs, sync
runs, answers); the content itself stays in Git and in the index. SQLite (one file) by
default, PostgreSQL when several machines share the state. Every write is one short
transaction. `StateStore` composes one class per concern (see the package docstring).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from thoth.state.answers import AnswerLog, LoggedAnswer
from thoth.state.backup import StateDamaged, check_state_file, not_sqlite
from thoth.state.core import (
    DEFAULT_SQLITE_PATH,
    OPEN_HINT,
    StateError,
    create_state_engine,
    fault_kind,
    reason,
    redact_url,
    sqlite_file,
    state_url,
)
from thoth.state.feedback import Feedback, FeedbackLog
from thoth.state.generations import UNSET, Generation, Generations, GenerationStatus
from thoth.state.runs import (
    Build,
    BuildOutcome,
    RunKind,
    Runs,
    SyncRun,
    SyncRunConflict,
    SyncStatus,
    pid_alive,
)
from thoth.state.upgrade import upgrade_to_head

__all__ = [
    "DEFAULT_SQLITE_PATH",
    "UNSET",
    "Build",
    "BuildOutcome",
    "Feedback",
    "Generation",
    "GenerationStatus",
    "LoggedAnswer",
    "RunKind",
    "StateDamaged",
    "StateError",
    "StateStore",
    "SyncRun",
    "SyncRunConflict",
    "SyncStatus",
    "pid_alive",
    "redact_url",
    "state_url",
]


class StateStore(Generations, Runs, AnswerLog, FeedbackLog):
    """Thread-safe handle on the state database; open with `StateStore.open(url)`."""

    @classmethod
    def open(cls, url: str) -> StateStore:
        """Connect and bring the database to this Thoth's schema (created if new)."""
        shown = redact_url(url)
        file = sqlite_file(url)
        if file is not None:
            check_state_file(file)  # a truncated file must not pass for a new database
        engine = create_state_engine(url)
        store = cls(engine, shown, file)
        try:
            store._upgrade(shown)
        except StateError:
            engine.dispose()
            raise
        except SQLAlchemyError as exc:
            engine.dispose()
            if file is not None and "file is not a database" in str(exc):
                raise not_sqlite(file) from exc
            hint = (
                "the database was busy or unreachable: retry when it is free, and "
                f"{OPEN_HINT} if it keeps failing"
                if fault_kind(exc) == "transient"
                else OPEN_HINT
            )
            raise StateError(f"cannot open state store {shown}: {reason(exc)} -> {hint}") from exc
        return store

    def _upgrade(self, shown: str) -> None:
        """Run the migrations in one write transaction. On SQLite, foreign keys are off while
        they run (a migration that rebuilds a referenced table, as SQLite's ALTER requires,
        would otherwise trip them) and checked in full before the commit."""
        with self._writer.connect() as conn:
            sqlite = conn.dialect.name == "sqlite"
            driver: Any = conn.connection.driver_connection
            if sqlite:
                driver.execute("PRAGMA foreign_keys = OFF")  # outside a transaction: applies
            try:
                with conn.begin():
                    upgrade_to_head(conn, shown)
                    if sqlite:
                        broken = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                        if broken:
                            raise StateError(
                                f"state store {shown}: the schema upgrade would leave "
                                f"{len(broken)} row(s) referring to missing rows (first: "
                                f"{tuple(broken[0])}); nothing was changed -> report it with "
                                "this message"
                            )
            finally:
                if sqlite:
                    driver.execute("PRAGMA foreign_keys = ON")
