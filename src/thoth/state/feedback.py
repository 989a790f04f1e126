"""What readers said of their answers: one row per report, the curator's queue."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, func, insert, select

from thoth.state.core import StateError, StoreCore, now, parse_ts, require, ts
from thoth.state.schema import FEEDBACK_KINDS, answer_feedback


@dataclass(frozen=True)
class Feedback:
    id: int
    answer_id: str
    workspace: str
    created_at: datetime
    caller: str | None  # the calling system of `tht serve`; None from the CLI
    kind: str
    note: str
    revision: str | None  # what the answer was served from
    masked: list[dict[str, Any]]  # over_masked: the answer's masked columns and their rule

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "answer_id": self.answer_id,
            "created_at": self.created_at.isoformat(),
            "caller": self.caller,
            "kind": self.kind,
            "note": self.note,
            "revision": self.revision,
            "masked": self.masked,
        }


class FeedbackLog(StoreCore):
    def add_feedback(
        self,
        answer_id: str,
        workspace: str,
        kind: str,
        note: str,
        *,
        caller: str | None,
        revision: str | None,
        masked: list[dict[str, Any]],
    ) -> Feedback:
        """Record one report on a logged answer (the caller checks that it may report it)."""
        require("answer id", answer_id)
        require("workspace", workspace)
        if kind not in FEEDBACK_KINDS:
            raise StateError(
                f"answer_feedback: unknown kind {kind!r} -> use one of {', '.join(FEEDBACK_KINDS)}"
            )
        created = now()
        values = {
            "answer_id": answer_id,
            "workspace": workspace,
            "created_at": ts(created),
            "caller": caller,
            "kind": kind,
            "note": note,
            "revision": revision,
            "masked": json.dumps(masked, sort_keys=True, ensure_ascii=False),
        }
        with self._write(f"answer_feedback: recording a report on {answer_id}") as conn:
            key = conn.execute(insert(answer_feedback).values(**values)).inserted_primary_key
        assert key is not None
        return Feedback(
            id=int(key[0]),
            answer_id=answer_id,
            workspace=workspace,
            created_at=parse_ts(ts(created)),
            caller=caller,
            kind=kind,
            note=note,
            revision=revision,
            masked=masked,
        )

    def get_feedback(self, workspace: str, feedback_id: int) -> Feedback:
        with self._read(f"answer_feedback: reading report {feedback_id}") as conn:
            row = conn.execute(
                select(answer_feedback).where(
                    answer_feedback.c.id == feedback_id, answer_feedback.c.workspace == workspace
                )
            ).first()
        if row is None:
            raise StateError(
                f"state store {self.url}: no feedback report {feedback_id} on workspace "
                f"{workspace} -> `tht answers feedback list` lists them",
                code="feedback_not_found",
            )
        return _feedback(row)

    def list_feedback(
        self,
        workspace: str,
        *,
        kind: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> list[Feedback]:
        """The workspace's reports, newest first (of one kind, since a time, at most `limit`)."""
        if kind is not None and kind not in FEEDBACK_KINDS:
            raise StateError(
                f"answer_feedback: unknown kind {kind!r} -> use one of {', '.join(FEEDBACK_KINDS)}"
            )
        query = select(answer_feedback).where(answer_feedback.c.workspace == workspace)
        if kind is not None:
            query = query.where(answer_feedback.c.kind == kind)
        if since is not None:
            query = query.where(answer_feedback.c.created_at >= ts(since))
        query = query.order_by(answer_feedback.c.created_at.desc(), answer_feedback.c.id.desc())
        if limit is not None:
            query = query.limit(limit)
        with self._read(f"answer_feedback: listing {workspace!r}") as conn:
            rows = conn.execute(query).all()
        return [_feedback(r) for r in rows]

    def feedback_totals(self, workspace: str) -> list[tuple[str | None, str, int]]:
        """(caller, kind, reports) for the workspace, since the log began."""
        c = answer_feedback.c
        query = (
            select(c.caller, c.kind, func.count())
            .where(c.workspace == workspace)
            .group_by(c.caller, c.kind)
        )
        with self._read(f"answer_feedback: counting {workspace!r}") as conn:
            return [(r[0], r[1], int(r[2])) for r in conn.execute(query).all()]


def _feedback(row: Row[Any]) -> Feedback:
    return Feedback(
        id=row.id,
        answer_id=row.answer_id,
        workspace=row.workspace,
        created_at=parse_ts(row.created_at),
        caller=row.caller,
        kind=row.kind,
        note=row.note,
        revision=row.revision,
        masked=json.loads(row.masked),
    )
