"""sync_runs.kind: the run lock is held by a docs sync or an Evidence publication (9374572).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 15:46:49

The release that added it kept schema version 1, so its databases opened under older code
and failed at the first `docs sync` ("table sync_runs has no column named kind"). Existing
runs were all docs syncs: the server default fills them with 'docs'.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from thoth.state.migrations import forward_only

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A column-level CHECK: ALTER TABLE ... ADD COLUMN carries it on SQLite and PostgreSQL
    # alike, no table rebuild needed.
    op.add_column(
        "sync_runs",
        sa.Column(
            "kind",
            sa.String(16),
            sa.CheckConstraint("kind IN ('docs', 'evidence')", name=op.f("ck_sync_runs_kind")),
            nullable=False,
            server_default="docs",
        ),
    )


def downgrade() -> None:
    forward_only(revision)
