"""answer_feedback: what readers say of the answers they got (wrong, incomplete, over_masked,
good, with a note), the curator's queue; and answer_log.context_dropped, degraded and
masked_values, what each answer's JSON says of how it was served, as columns that /metrics and
the alert thresholds count in SQL. Rows logged before are filled from their JSON.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03 20:00:00
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

from thoth.state.migrations import forward_only

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

TS = 32


def upgrade() -> None:
    with op.batch_alter_table("answer_log") as batch:
        batch.add_column(
            sa.Column("context_dropped", sa.Boolean(), nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("degraded", sa.Boolean(), nullable=False, server_default="0"))
        batch.add_column(
            sa.Column("masked_values", sa.Integer(), nullable=False, server_default="0")
        )
    log = sa.table(
        "answer_log",
        sa.column("id", sa.String),
        sa.column("answer", sa.Text),
        sa.column("context_dropped", sa.Boolean),
        sa.column("degraded", sa.Boolean),
        sa.column("masked_values", sa.Integer),
    )
    conn = op.get_bind()
    for row in conn.execute(sa.select(log.c.id, log.c.answer)).all():
        dropped, degraded, masked = _signals(json.loads(row.answer))
        if dropped or degraded or masked:
            conn.execute(
                log.update()
                .where(log.c.id == row.id)
                .values(context_dropped=dropped, degraded=degraded, masked_values=masked)
            )
    op.create_table(
        "answer_feedback",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("answer_id", sa.String(32), nullable=False),
        sa.Column("workspace", sa.String(200), nullable=False),
        sa.Column("created_at", sa.String(TS), nullable=False),
        sa.Column("caller", sa.String(100), nullable=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("revision", sa.String(200), nullable=True),
        sa.Column("masked", sa.Text(), nullable=False),
        sa.CheckConstraint(
            "kind IN ('wrong', 'incomplete', 'over_masked', 'good')",
            name=op.f("ck_answer_feedback_kind"),
        ),
        sa.ForeignKeyConstraint(
            ["answer_id"],
            ["answer_log.id"],
            name=op.f("fk_answer_feedback_answer_id_answer_log"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_answer_feedback")),
    )
    op.create_index(
        op.f("ix_answer_feedback_workspace_created"),
        "answer_feedback",
        ["workspace", "created_at"],
    )


def _signals(answer: dict[str, Any]) -> tuple[bool, bool, int]:
    """As thoth.state.answers.served_signals read them at this revision (frozen here: a
    migration must not change when the code does)."""
    dropped = answer.get("dropped") or {}
    masked = (answer.get("diagnostics") or {}).get("masked") or []
    return (
        bool(dropped.get("fragments") or dropped.get("documents")),
        bool(answer.get("degraded")),
        sum(int(m.get("values") or 0) for m in masked),
    )


def downgrade() -> None:
    forward_only(revision)
