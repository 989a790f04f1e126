"""Tables of the state store (SQLAlchemy Core), identical on SQLite and PostgreSQL.

This is the shape at the head migration, what the queries are written against. A database
gets it only through the migrations in `migrations/versions/` (run when the store opens it):
change a table here and add the migration that makes it so (see thoth.state.upgrade).

Timestamps are fixed-width ISO-8601 strings in UTC (`2024-05-01T09:30:00.000000+00:00`):
SQLite has no timezone-aware type, and one representation on both backends means a row
reads back the same wherever it was written; the fixed width keeps them sortable as text.
JSON documents are stored as text for the same reason.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

# state_meta.schema_version: 1 before migrations (tables made by `create_all`), 2 since the
# schema is managed by Alembic (migration 0004; the revision is in alembic_version). It stays 2
# as tables change: its only job is to make a Thoth without migrations refuse the database.
SCHEMA_VERSION: Final = 2

# The newest migration in migrations/versions/ (tests/test_state_migrations.py checks it): a
# database already there opens without loading Alembic, which costs ~0.15 s of imports.
HEAD_REVISION: Final = "0012"

GENERATION_STATUSES: Final = ("building", "candidate", "active", "retired", "failed", "abandoned")
BUILD_OUTCOMES: Final = ("activated", "gate_failed", "failed", "interrupted")

# Constraint names are explicit so errors and migrations can refer to them on both backends.
metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_name)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

_TS = 32  # len("2024-05-01T09:30:00.000000+00:00")


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


state_meta = Table(
    "state_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

# Append-only: the active revision of a workspace is its latest row, the rest is the audit
# trail of who published what and when.
revision_activations = Table(
    "revision_activations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("workspace", String(200), nullable=False),
    Column("revision", String(200), nullable=False),
    Column("activated_by", String(200), nullable=False),
    Column("activated_at", String(_TS), nullable=False),
    Index("ix_revision_activations_workspace_id", "workspace", "id"),
)

generations = Table(
    "generations",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("workspace", String(200), nullable=False),
    Column("revision", String(200), nullable=False),
    Column("status", String(16), nullable=False),
    Column("config", Text, nullable=False),
    Column("counts", Text, nullable=False),
    Column("created_at", String(_TS), nullable=False),
    Column("activated_at", String(_TS), nullable=True),
    CheckConstraint(_in("status", GENERATION_STATUSES), name="status"),
    CheckConstraint("status <> 'active' OR activated_at IS NOT NULL", name="active_has_time"),
    Index("ix_generations_workspace_created", "workspace", "created_at"),
)

# The invariant the runtime relies on: a workspace serves at most one generation. It lives in
# the database so that no code path, concurrent writer or manual UPDATE can break it.
Index(
    "ux_generations_one_active",
    generations.c.workspace,
    unique=True,
    sqlite_where=generations.c.status == "active",
    postgresql_where=generations.c.status == "active",
)

builds = Table(
    "builds",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("workspace", String(200), nullable=False),
    Column("revision", String(200), nullable=False),
    Column("generation", String(64), ForeignKey("generations.id"), nullable=False),
    Column("started_at", String(_TS), nullable=False),
    Column("finished_at", String(_TS), nullable=True),
    Column("duration_s", Float, nullable=True),
    Column("outcome", String(16), nullable=True),
    Column("counts", Text, nullable=False),
    Column("message", Text, nullable=False),
    CheckConstraint(f"outcome IS NULL OR {_in('outcome', BUILD_OUTCOMES)}", name="outcome"),
    CheckConstraint("(finished_at IS NULL) = (outcome IS NULL)", name="finished_has_outcome"),
    Index("ix_builds_workspace_id", "workspace", "id"),
)

SYNC_STATUSES: Final = ("running", "succeeded", "failed", "interrupted")
RUN_KINDS: Final = ("docs", "evidence", "schema")

# The registry of `tht docs sync` runs: what was read (revisions per source), with which
# pipeline, what changed by name, who ran it and how it ended. JSON documents as text.
# `full_rebuild` rather than `full`: FULL is a reserved word in PostgreSQL.
sync_runs = Table(
    "sync_runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("workspace", String(200), nullable=False),
    Column("status", String(16), nullable=False),
    Column("started_at", String(_TS), nullable=False),
    Column("finished_at", String(_TS), nullable=True),
    Column("run_by", String(200), nullable=False),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("full_rebuild", Boolean, nullable=False),
    Column("pipeline_version", Integer, nullable=False),
    Column("revisions", Text, nullable=False),
    Column("generation", String(64), nullable=True),
    Column("counts", Text, nullable=False),
    Column("changes", Text, nullable=False),
    Column("message", Text, nullable=False),
    # What holds the lock: a docs sync, or an Evidence publication (both build generations).
    Column("kind", String(16), nullable=False, server_default="docs"),
    CheckConstraint(_in("status", SYNC_STATUSES), name="status"),
    CheckConstraint(_in("kind", RUN_KINDS), name="kind"),
    CheckConstraint("(status = 'running') = (finished_at IS NULL)", name="finished_has_time"),
    Index("ix_sync_runs_workspace_id", "workspace", "id"),
)

# The overlap lock of `tht docs sync` and `tht workspace preprocess evidence`: at most one
# running build per workspace. In the database
# so that two processes (or machines sharing PostgreSQL) cannot both pass a check in Python.
Index(
    "ux_sync_runs_one_running",
    sync_runs.c.workspace,
    unique=True,
    sqlite_where=sync_runs.c.status == "running",
    postgresql_where=sync_runs.c.status == "running",
)

ANSWER_STATUSES: Final = (
    "not_searched",
    "nothing_found",
    "failed",
    "truncated",
    "found",
    "computed",  # a number computed by a catalog query (the analytics store)
    "needs_parameter",  # a catalog query covers it, a parameter is missing or not allowed
)

# One row per `ask`, failures included: what the administrator reviews and what
# `tht eval add-from-answer` turns into an evaluation question. `answer` is the full
# Answer.as_dict() of thoth.answer, so a logged answer reads back exactly as it was served.
answer_log = Table(
    "answer_log",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("workspace", String(200), nullable=False),
    Column("created_at", String(_TS), nullable=False),
    Column("question", Text, nullable=False),
    Column("request", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("answer", Text, nullable=False),
    Column("error_code", String(64), nullable=True),
    # The calling system of `tht serve` that asked; NULL from the CLI and Python.
    Column("caller", String(100), nullable=True),
    # What `answer` says of how it was served, as columns so that /metrics and the alert
    # thresholds count them in SQL (thoth.state.answers.served_signals).
    Column("context_dropped", Boolean, nullable=False, server_default="0"),
    Column("degraded", Boolean, nullable=False, server_default="0"),
    Column("masked_values", Integer, nullable=False, server_default="0"),
    CheckConstraint(_in("status", ANSWER_STATUSES), name="status"),
    Index("ix_answer_log_workspace_created", "workspace", "created_at"),
)

JOB_STATUSES: Final = ("queued", "running", "completed", "partial", "failed", "cancelled")
STEP_KINDS: Final = ("model", "tool")

# The deep-analysis agent's queue (thoth.agent): a job is claimed by a worker, which holds it
# while `lease_until` is in the future and extends the lease by heartbeats; a running job whose
# lease expired belongs to a dead worker and goes back to the queue. JSON documents as text.
agent_jobs = Table(
    "agent_jobs",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("workspace", String(200), nullable=False),
    # The calling system of `tht serve` that submitted it; NULL from the CLI.
    Column("caller", String(100), nullable=True),
    Column("question", Text, nullable=False),
    Column("request", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("created_at", String(_TS), nullable=False),
    Column("started_at", String(_TS), nullable=True),
    Column("finished_at", String(_TS), nullable=True),
    Column("claimed_by", String(200), nullable=True),
    Column("lease_until", String(_TS), nullable=True),
    Column("heartbeat_at", String(_TS), nullable=True),
    Column("attempts", Integer, nullable=False),
    Column("cancel_requested", Boolean, nullable=False),
    Column("result", Text, nullable=True),
    Column("error_code", String(64), nullable=True),
    Column("error", Text, nullable=True),
    Column("usage", Text, nullable=False),
    CheckConstraint(_in("status", JOB_STATUSES), name="status"),
    CheckConstraint(
        "status <> 'running' OR (claimed_by IS NOT NULL AND lease_until IS NOT NULL)",
        name="running_is_claimed",
    ),
    CheckConstraint(
        "(status IN ('queued', 'running')) = (finished_at IS NULL)", name="finished_has_time"
    ),
    Index("ix_agent_jobs_status_created", "status", "created_at"),
    Index("ix_agent_jobs_workspace_created", "workspace", "created_at"),
)

# The transcript of a job: every model turn and tool call with its result, in order, per
# attempt (a job recovered from a dead worker keeps the steps of the attempt that died).
agent_job_steps = Table(
    "agent_job_steps",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_id", String(32), ForeignKey("agent_jobs.id"), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("seq", Integer, nullable=False),
    Column("at", String(_TS), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("data", Text, nullable=False),
    CheckConstraint(_in("kind", STEP_KINDS), name="kind"),
    Index("ix_agent_job_steps_job_id", "job_id", "id"),
)

FEEDBACK_KINDS: Final = ("wrong", "incomplete", "over_masked", "good")

# What a reader said of an answer (`tht answers feedback`, POST /v1/feedback, MCP, the page):
# the curator's queue. `revision` is what the answer was served from; `masked` (JSON list)
# the columns the answer's figures lost to the pseudonymiser and the rule that decided, copied
# from the answer when the report is over_masked, so the reviewer can declare one harmless.
answer_feedback = Table(
    "answer_feedback",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("answer_id", String(32), ForeignKey("answer_log.id"), nullable=False),
    Column("workspace", String(200), nullable=False),
    Column("created_at", String(_TS), nullable=False),
    Column("caller", String(100), nullable=True),
    Column("kind", String(16), nullable=False),
    Column("note", Text, nullable=False),
    Column("revision", String(200), nullable=True),
    Column("masked", Text, nullable=False),
    CheckConstraint(_in("kind", FEEDBACK_KINDS), name="kind"),
    Index("ix_answer_feedback_workspace_created", "workspace", "created_at"),
)

SCHEDULE_STATUSES: Final = ("queued", "running", "succeeded", "failed")

# The runs of `[schedule]` routines (thoth.schedule), claimed under a lease as agent_jobs are,
# in a table of their own so that an agent worker never takes a routine. The id is the run's
# key, `<workspace>/<routine>@<due instant>`: two schedulers that find the same run due insert
# one row (the second insert does nothing), so a run is queued once whoever finds it first.
schedule_runs = Table(
    "schedule_runs",
    metadata,
    Column("id", String(400), primary_key=True),
    Column("workspace", String(200), nullable=False),
    Column("routine", String(120), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("due_at", String(_TS), nullable=False),
    Column("status", String(16), nullable=False),
    Column("created_at", String(_TS), nullable=False),
    Column("enqueued_by", String(200), nullable=False),
    Column("started_at", String(_TS), nullable=True),
    Column("finished_at", String(_TS), nullable=True),
    Column("claimed_by", String(200), nullable=True),
    Column("lease_until", String(_TS), nullable=True),
    Column("heartbeat_at", String(_TS), nullable=True),
    Column("attempts", Integer, nullable=False),
    Column("request", Text, nullable=False),
    Column("result", Text, nullable=True),
    Column("error_code", String(64), nullable=True),
    Column("error", Text, nullable=True),
    CheckConstraint(_in("status", SCHEDULE_STATUSES), name="status"),
    CheckConstraint(
        "status <> 'running' OR (claimed_by IS NOT NULL AND lease_until IS NOT NULL)",
        name="running_is_claimed",
    ),
    CheckConstraint(
        "(status IN ('queued', 'running')) = (finished_at IS NULL)", name="finished_has_time"
    ),
    Index("ix_schedule_runs_status_due", "status", "due_at"),
    Index("ix_schedule_runs_workspace_routine_due", "workspace", "routine", "due_at"),
)
