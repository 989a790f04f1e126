"""Sessions on disk: one directory per question→SQL conversation.

    <sessions_dir>/<session_id>/session.json   id, question, created_at (written once)
    <sessions_dir>/<session_id>/ledger.jsonl   the append-only ledger (thoth.session.ledger)

Session ids are `s-YYYYMMDD-HHMMSS-<6 hex>` (UTC creation time, then randomness), so sorting
ids sorts sessions by age. Sessions live wherever `sessions_dir` says and only ever write
there: they never stage, commit or otherwise touch the workspace's Git repository.
"""

from __future__ import annotations

import builtins
import os
import re
import secrets
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from thoth.errors import Problem, ProblemsError, ThothError
from thoth.search.outcome import Receipt
from thoth.session.effective import (
    Withdrawal,
    effective_decisions,
    memory_markers,
    withdrawals,
)
from thoth.session.ledger import (
    SQL_RUN_TYPE,
    Entry,
    EntryRefused,
    EvidenceReceipt,
    Ledger,
    SqlRunReceipt,
)
from thoth.storage import check_utc_timestamp, fsync_dir, validation_problems, write_durably

SESSION_ID_RE: Final = re.compile(r"s-\d{8}-\d{6}-[0-9a-f]{6}")
SESSION_FILE: Final = "session.json"
LEDGER_FILE: Final = "ledger.jsonl"
# Two sessions created in the same second draw 24 random bits each; a clash is rare enough
# that a few fresh draws always settle it, and a clash that persists means something else.
_ID_ATTEMPTS: Final = 5


class SessionNotFound(ThothError):
    """No session with that id in this sessions directory."""

    code = "session_not_found"


class SessionDamaged(ProblemsError):
    """A session directory exists but its session.json cannot be read as written."""


class SessionInfo(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str
    question: str
    created_at: str
    # The calling system that created it through the service (None: a local user). A caller
    # sees its own sessions only.
    caller: str | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not SESSION_ID_RE.fullmatch(value):
            raise ValueError(f"{value!r} is not a session id (s-YYYYMMDD-HHMMSS-<6 hex>)")
        return value

    @field_validator("created_at")
    @classmethod
    def _utc(cls, value: str) -> str:
        return check_utc_timestamp(value)


class Session:
    """One session: its question and its ledger. Every read goes to disk, so two processes
    working on the same session see each other's entries."""

    def __init__(self, info: SessionInfo, directory: Path) -> None:
        self.info = info
        self.directory = directory
        self.ledger = Ledger(directory / LEDGER_FILE, session_id=info.id)

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def question(self) -> str:
        return self.info.question

    @property
    def created_at(self) -> str:
        return self.info.created_at

    def append(
        self,
        stage: str,
        type: str,
        *,
        subject: str,
        detail: str = "",
        rationale: str = "",
        refs: int | None = None,
        receipt: EvidenceReceipt | None = None,
        run: SqlRunReceipt | None = None,
        base: int | None = None,
    ) -> Entry:
        return self.ledger.append(
            stage=stage,
            type=type,
            subject=subject,
            detail=detail,
            rationale=rationale,
            refs=refs,
            receipt=receipt,
            run=run,
            base=base,
        )

    def record_run(self, run: SqlRunReceipt, *, base: int | None = None) -> Entry:
        """Keep the receipt of a run of the approved final SQL (no rows, ever)."""
        outcome = (
            f"{run.row_count} row(s){' (truncated)' if run.truncated else ''}"
            if run.status == "succeeded"
            else f"failed [{run.code}]"
        )
        return self.append(
            "final_sql",
            SQL_RUN_TYPE,
            subject=f"final SQL of seq {run.final_sql_seq} run: {outcome}",
            run=run,
            base=base,
        )

    def retract(self, seq: int, *, rationale: str, base: int | None = None) -> Entry:
        """Withdraw entry `seq`, recorded in that entry's stage."""
        target = next((e for e in self.entries() if e.seq == seq), None)
        if target is None:
            raise EntryRefused(
                f"session {self.id}: retraction refused; nothing was written to {self.ledger.path}",
                [
                    Problem(
                        f"session {self.id}",
                        f"no entry has seq {seq}",
                        field="refs",
                        hint="pick the seq from the session's entries",
                    )
                ],
            )
        return self.append(
            target.stage,
            "retraction",
            subject=f"seq:{seq}",
            detail=f"withdraws {target.type} {target.subject!r}",
            rationale=rationale,
            refs=seq,
            base=base,
        )

    def reopen(self, stage: str, *, rationale: str, base: int | None = None) -> Entry:
        """Redo `stage`: its decisions and those of later stages so far stop standing."""
        return self.append(stage, "reopen", subject=stage, rationale=rationale, base=base)

    def rollback(self, stage: str, *, rationale: str, base: int | None = None) -> Entry:
        """Return to `stage`: decisions of later stages so far stop standing."""
        return self.append(stage, "rollback", subject=stage, rationale=rationale, base=base)

    def record_receipt(self, receipt: Receipt, *, base: int | None = None) -> Entry:
        """Keep the receipt of an Evidence search made by a stage (ids only, no text)."""
        if receipt.stage is None:
            raise EntryRefused(
                f"session {self.id}: evidence_receipt refused; nothing was written to "
                f"{self.ledger.path}",
                [
                    Problem(
                        f"session {self.id}",
                        f"the {receipt.purpose} receipt names no stage",
                        field="stage",
                        hint="search with the stage that asked, so its receipt can be filed",
                    )
                ],
            )
        return self.append(
            receipt.stage,
            "evidence_receipt",
            subject=f"{receipt.purpose} search",
            receipt=EvidenceReceipt(
                purpose=receipt.purpose,
                generation=receipt.generation,
                revision=receipt.revision,
                evidence_ids=tuple(receipt.evidence_ids),
            ),
            base=base,
        )

    def entries(self) -> list[Entry]:
        return self.ledger.entries()

    def effective(self) -> list[Entry]:
        return effective_decisions(self.entries())

    def memory_markers(self) -> list[Entry]:
        return memory_markers(self.entries())

    def withdrawals(self) -> dict[int, Withdrawal]:
        return withdrawals(self.entries())


class SessionStore:
    def __init__(self, sessions_dir: Path) -> None:
        self.sessions_dir = sessions_dir

    def create(self, question: str, *, caller: str | None = None) -> Session:
        if not question.strip():
            raise ProblemsError(
                f"session refused; nothing was created in {self.sessions_dir}",
                [Problem("question", "question is blank", hint="ask what the SQL should answer")],
            )
        self.sessions_dir.mkdir(parents=True, exist_ok=True)
        for _ in range(_ID_ATTEMPTS):
            now = datetime.now(UTC)
            info = SessionInfo(
                id=now.strftime("s-%Y%m%d-%H%M%S-") + secrets.token_hex(3),
                question=question,
                created_at=now.isoformat(timespec="microseconds"),
                caller=caller,
            )
            target = self.sessions_dir / info.id
            # Built aside and renamed in: a session directory is complete or absent, never a
            # directory without its session.json that would make list() fail.
            staging = Path(tempfile.mkdtemp(prefix=".creating-", dir=self.sessions_dir))
            try:
                write_durably(
                    staging / SESSION_FILE, info.model_dump_json(indent=2, exclude_none=True) + "\n"
                )
                try:
                    os.rename(staging, target)
                except OSError:
                    if target.exists():
                        continue  # the id was taken meanwhile: draw another
                    raise
            finally:
                if staging.exists():
                    shutil.rmtree(staging)
            fsync_dir(self.sessions_dir)
            return Session(info, target)
        raise ThothError(
            f"no free session id in {self.sessions_dir} after {_ID_ATTEMPTS} attempts "
            "-> check that nothing else writes session directories there, then retry"
        )

    def open(self, session_id: str) -> Session:
        if not SESSION_ID_RE.fullmatch(session_id):
            raise SessionNotFound(
                f"{session_id!r} is not a session id (s-YYYYMMDD-HHMMSS-<6 hex>) "
                f"-> list the sessions in {self.sessions_dir} to find it"
            )
        directory = self.sessions_dir / session_id
        if not directory.is_dir():
            raise SessionNotFound(
                f"session {session_id} not found in {self.sessions_dir} "
                "-> check the id and the sessions directory"
            )
        return Session(self._read_info(directory), directory)

    def list(self) -> builtins.list[Session]:
        """Every session, oldest first. Names that are not session ids are not sessions and
        are left alone (that includes `.creating-*`, a creation still in progress or
        interrupted); a session directory whose session.json is damaged raises."""
        if not self.sessions_dir.is_dir():
            return []
        return [
            Session(self._read_info(path), path)
            for path in sorted(self.sessions_dir.iterdir())
            if path.is_dir() and SESSION_ID_RE.fullmatch(path.name)
        ]

    def _read_info(self, directory: Path) -> SessionInfo:
        path = directory / SESSION_FILE
        hint = "restore session.json from a backup; the ledger next to it is untouched"
        summary = f"session {directory.name}: {path} cannot be read"
        try:
            text = path.read_text("utf-8")
        except (FileNotFoundError, UnicodeDecodeError) as exc:
            raise SessionDamaged(summary, [Problem(str(path), str(exc), hint=hint)]) from exc
        try:
            info = SessionInfo.model_validate_json(text)
        except ValidationError as exc:
            raise SessionDamaged(summary, validation_problems(exc, str(path), hint)) from exc
        if info.id != directory.name:
            raise SessionDamaged(
                summary,
                [
                    Problem(
                        str(path),
                        f"id {info.id!r} is not the directory's name {directory.name!r}",
                        field="id",
                        hint=hint,
                    )
                ],
            )
        return info
