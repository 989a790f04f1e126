"""The answer log: one row per `ask`, failures included, read back exactly as it was served."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Integer, Row, func, insert, select

from thoth.state.core import StateError, StoreCore, dump_json, load_json, now, parse_ts, require, ts
from thoth.state.schema import ANSWER_STATUSES, answer_log


@dataclass(frozen=True)
class LoggedAnswer:
    """One `ask` as it was served: `answer` is the full Answer.as_dict() (thoth.answer)."""

    id: str
    workspace: str
    created_at: datetime
    question: str
    request: dict[str, Any]
    status: str
    answer: dict[str, Any]
    error_code: str | None
    caller: str | None = None  # the calling system of `tht serve`; None from the CLI
    context_dropped: bool = False  # the context lost fragments or documents to the budget
    degraded: bool = False  # served by a search that did without part of the engine
    masked_values: int = 0  # values of its figures the model got masked


def served_signals(answer: dict[str, Any]) -> tuple[bool, bool, int]:
    """What an answer (Answer.as_dict()) says of how it was served: context dropped for the
    budget, a degraded search, and how many values of its figures the model got masked."""
    dropped = answer.get("dropped") or {}
    masked = (answer.get("diagnostics") or {}).get("masked") or []
    return (
        bool(dropped.get("fragments") or dropped.get("documents")),
        bool(answer.get("degraded")),
        sum(int(m.get("values") or 0) for m in masked),
    )


class AnswerNotFound(StateError):
    """No logged answer with that id (or, to a calling system, not one it was given)."""

    code = "answer_not_found"


class AnswerLog(StoreCore):
    """What the administrator reviews and `tht eval add-from-answer` turns into a case."""

    def log_answer(
        self,
        answer_id: str,
        workspace: str,
        question: str,
        request: dict[str, Any],
        status: str,
        answer: dict[str, Any],
        error_code: str | None = None,
        caller: str | None = None,
    ) -> None:
        """Record one served answer (or failure); an id can be logged only once. `caller` is
        the calling system that asked through the service (None from the CLI)."""
        require("answer id", answer_id)
        require("workspace", workspace)
        if status not in ANSWER_STATUSES:
            raise StateError(
                f"answer_log: unknown status {status!r} for {answer_id} -> use one of "
                f"{', '.join(ANSWER_STATUSES)}"
            )
        dropped, degraded, masked = served_signals(answer)
        values = {
            "id": answer_id,
            "workspace": workspace,
            "created_at": ts(now()),
            "question": question,
            "request": dump_json(f"request of answer {answer_id}", request),
            "status": status,
            "answer": dump_json(f"answer {answer_id}", answer),
            "error_code": error_code,
            "caller": caller,
            "context_dropped": dropped,
            "degraded": degraded,
            "masked_values": masked,
        }
        with self._write(f"answer_log: recording {answer_id}") as conn:
            conn.execute(insert(answer_log).values(**values))

    def get_answer(self, answer_id: str) -> LoggedAnswer:
        with self._read(f"answer_log: reading {answer_id}") as conn:
            row = conn.execute(select(answer_log).where(answer_log.c.id == answer_id)).first()
        if row is None:
            raise AnswerNotFound(
                f"state store {self.url}: answer {answer_id!r} not found in table answer_log "
                "-> check the id (`tht answers log` lists the logged answers)"
            )
        return _logged_answer(row)

    def list_answers(
        self, workspace: str, limit: int = 20, status: str | None = None
    ) -> list[LoggedAnswer]:
        """The workspace's most recent answers, newest first, optionally of one status."""
        if limit < 1:
            raise StateError(f"answer_log: limit must be at least 1, got {limit}")
        if status is not None and status not in ANSWER_STATUSES:
            raise StateError(
                f"answer_log: unknown status {status!r} -> use one of {', '.join(ANSWER_STATUSES)}"
            )
        query = select(answer_log).where(answer_log.c.workspace == workspace)
        if status is not None:
            query = query.where(answer_log.c.status == status)
        with self._read(f"answer_log: listing {workspace!r}") as conn:
            rows = conn.execute(
                query.order_by(answer_log.c.created_at.desc(), answer_log.c.id.desc()).limit(limit)
            ).all()
        return [_logged_answer(r) for r in rows]

    def answer_totals(self, workspace: str) -> list[AnswerTotal]:
        """The workspace's answers counted per caller, status and failure code, in SQL (what
        GET /metrics exposes as counters)."""
        c = answer_log.c
        query = (
            select(
                c.caller,
                c.status,
                c.error_code,
                func.count().label("answers"),
                func.sum(func.cast(c.context_dropped, Integer)).label("context_dropped"),
                func.sum(func.cast(c.degraded, Integer)).label("degraded"),
                func.sum(c.masked_values).label("masked_values"),
            )
            .where(c.workspace == workspace)
            .group_by(c.caller, c.status, c.error_code)
        )
        with self._read(f"answer_log: counting {workspace!r}") as conn:
            return [_total(r) for r in conn.execute(query).all()]

    def answers_since(self, workspace: str, since: datetime) -> list[LoggedAnswer]:
        """The workspace's answers logged at or after `since`, oldest first."""
        query = (
            select(answer_log)
            .where(answer_log.c.workspace == workspace, answer_log.c.created_at >= ts(since))
            .order_by(answer_log.c.created_at, answer_log.c.id)
        )
        with self._read(f"answer_log: reading {workspace!r} since {ts(since)}") as conn:
            rows = conn.execute(query).all()
        return [_logged_answer(r) for r in rows]


@dataclass(frozen=True)
class AnswerTotal:
    """Answers of one caller with one status (and failure code), since the log began."""

    caller: str | None
    status: str
    error_code: str | None
    answers: int
    context_dropped: int
    degraded: int
    masked_values: int


def _total(row: Row[Any]) -> AnswerTotal:
    return AnswerTotal(
        row.caller,
        row.status,
        row.error_code,
        int(row.answers),
        int(row.context_dropped or 0),
        int(row.degraded or 0),
        int(row.masked_values or 0),
    )


def _logged_answer(row: Row[Any]) -> LoggedAnswer:
    return LoggedAnswer(
        id=row.id,
        workspace=row.workspace,
        created_at=parse_ts(row.created_at),
        question=row.question,
        request=load_json(row.request),
        status=row.status,
        answer=load_json(row.answer),
        error_code=row.error_code,
        caller=row.caller,
        context_dropped=bool(row.context_dropped),
        degraded=bool(row.degraded),
        masked_values=int(row.masked_values),
    )
