"""The state store as first released (efcec13): revisions, generations, builds.

Revision ID: 0001
Revises:
Create Date: 2026-11-29 13:06:46

The exact tables `metadata.create_all` made at that commit: a database created by it is
stamped here when it is first opened by a Thoth with migrations (see thoth.state.upgrade).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from thoth.state.migrations import forward_only

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TS = 32  # len("2024-05-01T09:30:00.000000+00:00")


def upgrade() -> None:
    op.create_table(
        "generations",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("workspace", sa.String(200), nullable=False),
        sa.Column("revision", sa.String(200), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("config", sa.Text(), nullable=False),
        sa.Column("counts", sa.Text(), nullable=False),
        sa.Column("created_at", sa.String(TS), nullable=False),
        sa.Column("activated_at", sa.String(TS), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_generations")),
        sa.CheckConstraint(
            "status IN ('building', 'candidate', 'active', 'retired', 'failed')",
            name=op.f("ck_generations_status"),
        ),
        sa.CheckConstraint(
            "status <> 'active' OR activated_at IS NOT NULL",
            name=op.f("ck_generations_active_has_time"),
        ),
    )
    op.create_index(
        op.f("ix_generations_workspace_created"), "generations", ["workspace", "created_at"]
    )
    op.create_index(
        op.f("ux_generations_one_active"),
        "generations",
        ["workspace"],
        unique=True,
        sqlite_where=sa.text("status = 'active'"),
        postgresql_where=sa.text("status = 'active'"),
    )
    op.create_table(
        "revision_activations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("workspace", sa.String(200), nullable=False),
        sa.Column("revision", sa.String(200), nullable=False),
        sa.Column("activated_by", sa.String(200), nullable=False),
        sa.Column("activated_at", sa.String(TS), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_revision_activations")),
    )
    op.create_index(
        op.f("ix_revision_activations_workspace_id"), "revision_activations", ["workspace", "id"]
    )
    state_meta = op.create_table(
        "state_meta",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_state_meta")),
    )
    op.bulk_insert(state_meta, [{"key": "schema_version", "value": "1"}])
    op.create_table(
        "builds",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("workspace", sa.String(200), nullable=False),
        sa.Column("revision", sa.String(200), nullable=False),
        sa.Column("generation", sa.String(64), nullable=False),
        sa.Column("started_at", sa.String(TS), nullable=False),
        sa.Column("finished_at", sa.String(TS), nullable=True),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("outcome", sa.String(16), nullable=True),
        sa.Column("counts", sa.Text(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_builds")),
        sa.CheckConstraint(
            "outcome IS NULL OR outcome IN ('activated', 'gate_failed', 'failed', 'interrupted')",
            name=op.f("ck_builds_outcome"),
        ),
        sa.CheckConstraint(
            "(finished_at IS NULL) = (outcome IS NULL)", name=op.f("ck_builds_finished_has_outcome")
        ),
        sa.ForeignKeyConstraint(
            ["generation"], ["generations.id"], name=op.f("fk_builds_generation_generations")
        ),
    )
    op.create_index(op.f("ix_builds_workspace_id"), "builds", ["workspace", "id"])


def downgrade() -> None:
    forward_only(revision)
