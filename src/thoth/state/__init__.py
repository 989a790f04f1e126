"""Relational state: the revision and index generation each workspace serves, and its builds.

SQLite file by default (`<workspace>/.thoth/state.sqlite`), PostgreSQL via `[state].url`.
"""

from thoth.state.schema import BUILD_OUTCOMES, GENERATION_STATUSES
from thoth.state.store import (
    Build,
    BuildOutcome,
    Generation,
    GenerationStatus,
    StateError,
    StateStore,
    redact_url,
    state_url,
)

__all__ = [
    "BUILD_OUTCOMES",
    "GENERATION_STATUSES",
    "Build",
    "BuildOutcome",
    "Generation",
    "GenerationStatus",
    "StateError",
    "StateStore",
    "redact_url",
    "state_url",
]
