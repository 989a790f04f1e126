"""answer_log.status 'computed' and 'needs_parameter': the numeric path's answers are logged.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 05:00:00

The analytics store (level 3) answers with figures computed by catalog queries, or asks for a
missing parameter; both are logged like every other answer. The status CHECK constraint is
replaced; SQLite cannot alter a constraint, so the table is rebuilt there (Alembic's batch mode
copies every row).
"""

from __future__ import annotations

from alembic import op

from thoth.state.migrations import forward_only

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("answer_log", recreate="auto") as batch:
        batch.drop_constraint(op.f("ck_answer_log_status"), type_="check")
        batch.create_check_constraint(
            op.f("ck_answer_log_status"),
            "status IN ('not_searched', 'nothing_found', 'failed', 'truncated', 'found', "
            "'computed', 'needs_parameter')",
        )


def downgrade() -> None:
    forward_only(revision)
