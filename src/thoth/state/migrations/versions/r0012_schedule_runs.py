"""schedule_runs: the runs of the `[schedule]` routines, one row per routine and due instant,
claimed under a lease as agent_jobs are.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-07 04:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from thoth.state.migrations import forward_only

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

TS = 32


def upgrade() -> None:
    op.create_table(
        "schedule_runs",
        sa.Column("id", sa.String(400), nullable=False),
        sa.Column("workspace", sa.String(200), nullable=False),
        sa.Column("routine", sa.String(120), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("due_at", sa.String(TS), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.String(TS), nullable=False),
        sa.Column("enqueued_by", sa.String(200), nullable=False),
        sa.Column("started_at", sa.String(TS), nullable=True),
        sa.Column("finished_at", sa.String(TS), nullable=True),
        sa.Column("claimed_by", sa.String(200), nullable=True),
        sa.Column("lease_until", sa.String(TS), nullable=True),
        sa.Column("heartbeat_at", sa.String(TS), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("request", sa.Text(), nullable=False),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("error_code", sa.String(64), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_schedule_runs")),
        sa.CheckConstraint(
            "status IN ('queued', 'running', 'succeeded', 'failed')",
            name=op.f("ck_schedule_runs_status"),
        ),
        sa.CheckConstraint(
            "status <> 'running' OR (claimed_by IS NOT NULL AND lease_until IS NOT NULL)",
            name=op.f("ck_schedule_runs_running_is_claimed"),
        ),
        sa.CheckConstraint(
            "(status IN ('queued', 'running')) = (finished_at IS NULL)",
            name=op.f("ck_schedule_runs_finished_has_time"),
        ),
    )
    op.create_index(op.f("ix_schedule_runs_status_due"), "schedule_runs", ["status", "due_at"])
    op.create_index(
        op.f("ix_schedule_runs_workspace_routine_due"),
        "schedule_runs",
        ["workspace", "routine", "due_at"],
    )


def downgrade() -> None:
    forward_only(revision)
