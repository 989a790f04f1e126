"""Relational state: the revision and index generation each workspace serves, and its runs.

SQLite file by default (`<workspace>/.thoth/state.sqlite`), PostgreSQL via `[state].url`.

Layout, one module per concern:

- `core`: URL, engine, SQLite configuration, the read/write transactions of `StoreCore` and
  the wording of database failures (only a transient fault is worth retrying).
- `generations`: revision activations and the generation state machine (`Generations`).
- `runs`: builds and sync runs, whose running row is the workspace's run lock (`Runs`).
- `answers`: the answer log (`AnswerLog`).
- `feedback`: what readers said of their answers (`FeedbackLog`).
- `stats`: the answer log and the feedback counted per day and caller, and the rates above
  `[answers.alerts]` (`tht answers stats`, `tht verify`, the service log).
- `schema`: the tables at the head revision; `migrations/versions/`: how a database gets
  there (Alembic, forward-only); `upgrade`: what the store does with a database it opens.
- `store`: `StateStore`, the composition of the concern classes, and `StateStore.open`.

- `jobs`: the deep-analysis agent's queue (`JobQueue`, over the store's engine).
- `schedule`: the runs of the `[schedule]` routines, queued once per key and claimed under a
  lease as jobs are (`ScheduleQueue`, over the store's engine).
- `lease`: the leased queue both are: claim, heartbeat, the holder's check, orphan recovery.

A new concern follows the same pattern: its tables in `schema`, a
migration `versions/rNNNN_<slug>.py` whose `down_revision` is the current head (and
`schema.HEAD_REVISION` moved to it), a module `jobs.py` with a `Jobs(StoreCore)` class and
its typed results (frozen dataclasses), and `Jobs` added to the bases of `StateStore`.
"""

from thoth.state.answers import AnswerNotFound, LoggedAnswer
from thoth.state.core import StateError, redact_url, state_url
from thoth.state.feedback import Feedback
from thoth.state.generations import Generation, GenerationStatus
from thoth.state.jobs import (
    Job,
    JobFinished,
    JobNotFound,
    JobNotRetryable,
    JobQueue,
    JobStep,
)
from thoth.state.lease import JobLeaseLost
from thoth.state.runs import Build, BuildOutcome, RunKind, SyncRun, SyncRunConflict, SyncStatus
from thoth.state.schema import (
    ANSWER_STATUSES,
    BUILD_OUTCOMES,
    FEEDBACK_KINDS,
    GENERATION_STATUSES,
    SYNC_STATUSES,
)
from thoth.state.store import StateStore

__all__ = [
    "ANSWER_STATUSES",
    "BUILD_OUTCOMES",
    "FEEDBACK_KINDS",
    "GENERATION_STATUSES",
    "SYNC_STATUSES",
    "AnswerNotFound",
    "Build",
    "BuildOutcome",
    "Feedback",
    "Generation",
    "GenerationStatus",
    "Job",
    "JobFinished",
    "JobLeaseLost",
    "JobNotFound",
    "JobNotRetryable",
    "JobQueue",
    "JobStep",
    "LoggedAnswer",
    "RunKind",
    "StateError",
    "StateStore",
    "SyncRun",
    "SyncRunConflict",
    "SyncStatus",
    "redact_url",
    "state_url",
]
