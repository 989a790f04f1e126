"""agent_jobs and agent_job_steps: the deep-analysis agent's queue and its transcripts.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 09:00:00

A job is claimed by one worker (`FOR UPDATE SKIP LOCKED` on PostgreSQL, the write lock of
BEGIN IMMEDIATE on SQLite) and held by a lease its heartbeats extend; a running job whose
lease expired is recovered. Its steps (model turns, tool calls and results) are one row each.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from thoth.state.migrations import forward_only

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

TS = 32


def upgrade() -> None:
    op.create_table(
        "agent_jobs",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("workspace", sa.String(200), nullable=False),
        sa.Column("caller", sa.String(100), nullable=True),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("request", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.String(TS), nullable=False),
        sa.Column("started_at", sa.String(TS), nullable=True),
        sa.Column("finished_at", sa.String(TS), nullable=True),
        sa.Column("claimed_by", sa.String(200), nullable=True),
        sa.Column("lease_until", sa.String(TS), nullable=True),
        sa.Column("heartbeat_at", sa.String(TS), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("error_code", sa.String(64), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("usage", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agent_jobs")),
        sa.CheckConstraint(
            "status IN ('queued', 'running', 'completed', 'failed', 'cancelled')",
            name=op.f("ck_agent_jobs_status"),
        ),
        sa.CheckConstraint(
            "status <> 'running' OR (claimed_by IS NOT NULL AND lease_until IS NOT NULL)",
            name=op.f("ck_agent_jobs_running_is_claimed"),
        ),
        sa.CheckConstraint(
            "(status IN ('queued', 'running')) = (finished_at IS NULL)",
            name=op.f("ck_agent_jobs_finished_has_time"),
        ),
    )
    op.create_index(op.f("ix_agent_jobs_status_created"), "agent_jobs", ["status", "created_at"])
    op.create_index(
        op.f("ix_agent_jobs_workspace_created"), "agent_jobs", ["workspace", "created_at"]
    )
    op.create_table(
        "agent_job_steps",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(32), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("at", sa.String(TS), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agent_job_steps")),
        sa.ForeignKeyConstraint(
            ["job_id"], ["agent_jobs.id"], name=op.f("fk_agent_job_steps_job_id_agent_jobs")
        ),
        sa.CheckConstraint("kind IN ('model', 'tool')", name=op.f("ck_agent_job_steps_kind")),
    )
    op.create_index(op.f("ix_agent_job_steps_job_id"), "agent_job_steps", ["job_id", "id"])


def downgrade() -> None:
    forward_only(revision)
