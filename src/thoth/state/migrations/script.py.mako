"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
Create Date: ${create_date}

Forward-only: Thoth never downgrades a database (see docs/publishing-and-search.md).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from thoth.state.migrations import forward_only
${imports if imports else ""}
revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = None
depends_on = None


def upgrade() -> None:
    ${upgrades if upgrades else "pass"}


def downgrade() -> None:
    forward_only(revision)
