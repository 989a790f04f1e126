"""generations.status 'abandoned': a candidate whose build died before its evaluation gate.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 22:40:00

Until now such a candidate was marked 'failed', like one its gate refused; `tht evidence
generations` could not tell "evaluated and refused" from "never evaluated". The status CHECK
constraint is replaced; SQLite cannot alter a constraint, so the table is rebuilt there
(Alembic's batch mode copies every row).
"""

from __future__ import annotations

from alembic import op

from thoth.state.migrations import forward_only

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_STATUSES = "'building', 'candidate', 'active', 'retired', 'failed', 'abandoned'"


def upgrade() -> None:
    with op.batch_alter_table("generations", recreate="auto") as batch:
        batch.drop_constraint(op.f("ck_generations_status"), type_="check")
        batch.create_check_constraint(op.f("ck_generations_status"), f"status IN ({_STATUSES})")


def downgrade() -> None:
    forward_only(revision)
