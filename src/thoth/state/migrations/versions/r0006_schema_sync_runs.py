"""sync_runs.kind 'schema': `tht schema sync` holds the workspace's build lock too.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 03:40:00

The schema index is built into the same generation as Evidence and documents, from the active
one, so its sync takes the same lock and leaves a row in the same registry. The kind CHECK
constraint is replaced; SQLite cannot alter a constraint, so the table is rebuilt there
(Alembic's batch mode copies every row).
"""

from __future__ import annotations

from alembic import op

from thoth.state.migrations import forward_only

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sync_runs", recreate="auto") as batch:
        batch.drop_constraint(op.f("ck_sync_runs_kind"), type_="check")
        batch.create_check_constraint(
            op.f("ck_sync_runs_kind"), "kind IN ('docs', 'evidence', 'schema')"
        )


def downgrade() -> None:
    forward_only(revision)
