"""The run registry of `tht docs sync` and the answer log (b946f0a).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 15:37:10

sync_runs as first released, before it had a `kind` (0003); its running row is the run lock
(partial unique index ux_sync_runs_one_running).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from thoth.state.migrations import forward_only

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TS = 32


def upgrade() -> None:
    op.create_table(
        "sync_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("workspace", sa.String(200), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("started_at", sa.String(TS), nullable=False),
        sa.Column("finished_at", sa.String(TS), nullable=True),
        sa.Column("run_by", sa.String(200), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("full_rebuild", sa.Boolean(), nullable=False),
        sa.Column("pipeline_version", sa.Integer(), nullable=False),
        sa.Column("revisions", sa.Text(), nullable=False),
        sa.Column("generation", sa.String(64), nullable=True),
        sa.Column("counts", sa.Text(), nullable=False),
        sa.Column("changes", sa.Text(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sync_runs")),
        sa.CheckConstraint(
            "status IN ('running', 'succeeded', 'failed', 'interrupted')",
            name=op.f("ck_sync_runs_status"),
        ),
        sa.CheckConstraint(
            "(status = 'running') = (finished_at IS NULL)",
            name=op.f("ck_sync_runs_finished_has_time"),
        ),
    )
    op.create_index(op.f("ix_sync_runs_workspace_id"), "sync_runs", ["workspace", "id"])
    op.create_index(
        op.f("ux_sync_runs_one_running"),
        "sync_runs",
        ["workspace"],
        unique=True,
        sqlite_where=sa.text("status = 'running'"),
        postgresql_where=sa.text("status = 'running'"),
    )
    op.create_table(
        "answer_log",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("workspace", sa.String(200), nullable=False),
        sa.Column("created_at", sa.String(TS), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("request", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("error_code", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_answer_log")),
        sa.CheckConstraint(
            "status IN ('not_searched', 'nothing_found', 'failed', 'truncated', 'found')",
            name=op.f("ck_answer_log_status"),
        ),
    )
    op.create_index(
        op.f("ix_answer_log_workspace_created"), "answer_log", ["workspace", "created_at"]
    )


def downgrade() -> None:
    forward_only(revision)
