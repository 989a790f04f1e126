"""Relational state: the revision and index generation each workspace serves, and its builds.

SQLite file by default (`<workspace>/.thoth/state.sqlite`), PostgreSQL via `[state].url`.
"""

from thoth.state.schema import ANSWER_STATUSES, BUILD_OUTCOMES, GENERATION_STATUSES, SYNC_STATUSES
from thoth.state.store import (
    Build,
    BuildOutcome,
    Generation,
    GenerationStatus,
    LoggedAnswer,
    StateError,
    StateStore,
    SyncRun,
    SyncRunConflict,
    SyncStatus,
    redact_url,
    state_url,
)

__all__ = [
    "ANSWER_STATUSES",
    "BUILD_OUTCOMES",
    "GENERATION_STATUSES",
    "SYNC_STATUSES",
    "Build",
    "BuildOutcome",
    "Generation",
    "GenerationStatus",
    "LoggedAnswer",
    "StateError",
    "StateStore",
    "SyncRun",
    "SyncRunConflict",
    "SyncStatus",
    "redact_url",
    "state_url",
]
