"""state_meta.schema_version = 2: the schema is managed by Alembic from here on.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 00:00:00

A Thoth without migrations accepts only schema version 1 and would use a database whose
tables have moved on; with 2 it refuses it ("schema version 2, this Thoth uses 1") instead.
The revision itself is in alembic_version.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from thoth.state.migrations import forward_only

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    state_meta = sa.table("state_meta", sa.column("key", sa.String), sa.column("value", sa.Text))
    op.execute(state_meta.update().where(state_meta.c.key == "schema_version").values(value="2"))


def downgrade() -> None:
    forward_only(revision)
