"""answer_log.caller: the calling system that asked, when the question came through the service.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 09:00:00

`tht serve` authenticates calling systems by key; the seed's limit "the service knows the
calling system, not the person" makes the caller the one identity an answer can be traced to.
Questions asked from the CLI or Python have no caller (NULL).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from thoth.state.migrations import forward_only

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("answer_log") as batch:
        batch.add_column(sa.Column("caller", sa.String(100), nullable=True))


def downgrade() -> None:
    forward_only(revision)
