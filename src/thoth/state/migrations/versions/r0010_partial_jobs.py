"""agent_jobs.status 'partial': a deep-analysis answer written after a failed or refused tool
call, or cut short, is stored with the gaps it has, never as 'completed'.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03 07:00:00

The status CHECK constraint is replaced; SQLite cannot alter a constraint, so the table is
rebuilt there (Alembic's batch mode copies every row).
"""

from __future__ import annotations

from alembic import op

from thoth.state.migrations import forward_only

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agent_jobs", recreate="auto") as batch:
        batch.drop_constraint(op.f("ck_agent_jobs_status"), type_="check")
        batch.create_check_constraint(
            op.f("ck_agent_jobs_status"),
            "status IN ('queued', 'running', 'completed', 'partial', 'failed', 'cancelled')",
        )


def downgrade() -> None:
    forward_only(revision)
